"""Prometheus metrics and request-rate series as inputs: they fill the profile's hourly roll-ups (docs/metrics.md)."""
