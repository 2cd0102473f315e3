"""pandera as capplan uses it: schemas of pandas frames only, without importing Dask for them.

When it first builds a ``DataFrameModel``'s schema, pandera collects every series and index type it
could validate, and for that imports ``pandera.typing.dask``, which imports ``dask.dataframe``
whenever Dask is installed (it is: the partitioned roll-ups run on it). That import costs 0.5–1.3 s
of CPU (``python -X importtime``, issue 24) in every command that validates a frame, and it holds
the GIL while the profile's refresh counts on the other thread. capplan validates pandas frames
only (its partitions are rolled up into Arrow and pandas before any schema sees them), so
:func:`pandas_only` tells pandera's typing that Dask frames are not among its types, as pandera
itself does where Dask is not installed. Dask itself is untouched: ``import dask.dataframe`` still
works and imports Dask.
"""

from __future__ import annotations

import sys
import types

_DASK_TYPING = "pandera.typing.dask"


def pandas_only() -> None:
    """Make pandera see no Dask types (``pandera.typing.dask.DASK_INSTALLED = False``); idempotent.

    Does nothing once ``pandera.typing.dask`` is imported (someone asked for pandera's Dask types:
    they keep them). Call before the first schema is built; ``capplan/__init__.py`` does.
    """
    if _DASK_TYPING in sys.modules:
        return
    module = types.ModuleType(_DASK_TYPING, "pandera's Dask types, not loaded by capplan (capplan/validation.py).")
    module.DASK_INSTALLED = False
    sys.modules[_DASK_TYPING] = module
