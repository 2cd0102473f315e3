"""Cost: GPU-hour prices, the cheapest reserved commitment, and the blended monthly plan.

``prices`` loads the price book; ``commitment`` holds the per-request cost, the load-duration
curve and the commitment optimiser; ``plan`` blends options into a monthly plan with ranges.
"""
