"""Drift of the token mix and its price per request.

``stats`` holds the pure tests (PSI, chi-square, CUSUM, Shapley decomposition);
``detect`` reads daily token histograms from DuckDB and applies them.
"""
