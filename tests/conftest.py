"""Shared pytest fixtures."""

from __future__ import annotations

import os

# No network here: keep Prefect from phoning home, and give its temporary server time to start.
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")
os.environ.setdefault("MPLBACKEND", "Agg")
