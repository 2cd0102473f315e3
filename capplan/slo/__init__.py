"""Service-level objectives: error budgets and burn rates.

``budget`` is the arithmetic (pure functions of targets, windows and event counts);
``status`` reads the per-minute good/valid counts from DuckDB and applies it.
"""
