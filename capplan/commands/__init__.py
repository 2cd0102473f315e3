"""CLI sub-commands; each module defines ``register(app)``.

Add a module's name here when you add the module.
"""

COMMAND_MODULES: list[str] = [
    "ingest",
    "profile",
    "cost",
    "size",
    "sample",
    "slo",
    "drift",
    "plan",
    "serve",
    "forecast",
]
