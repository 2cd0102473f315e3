"""Drift of the token mix and its price per request.

``stats`` holds the pure tests (PSI, chi-square, CUSUM, Shapley decomposition); ``histogram`` reads
daily token histograms from DuckDB; ``detect`` compares windows and applies the alert rule;
``pricing`` prices the findings and ``decomposition`` splits a monthly cost change (per-request
cost: :mod:`capplan.sizing.cost.per_request`).
"""
