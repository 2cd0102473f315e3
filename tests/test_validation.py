"""capplan/validation.py: pandera builds and checks capplan's pandas schemas without importing Dask.

Each case runs in a fresh interpreter: whether a module was imported is process state.
"""

from __future__ import annotations

import json
import subprocess
import sys

_VALIDATE_A_FRAME = """
import json, sys
import pandas as pd
from capplan.profile.schemas import HourlyTraffic
schema = HourlyTraffic.to_schema()  # pandera collects its series types here: the import of Dask was here
bad = pd.DataFrame({c: pd.Series([], dtype=object) for c in schema.columns}).astype({"requests": "Int64"})
bad.loc[0, "requests"] = -1
try:
    schema.validate(bad, lazy=True)
    refused = False
except Exception as exc:
    refused = "requests" in str(exc)
before = "dask.dataframe" in sys.modules
import dask.dataframe as dd  # Dask itself is untouched
print(json.dumps({"dask_before": before, "refused": refused, "dask_frame": hasattr(dd, "from_pandas")}))
"""


def _run(code: str) -> dict:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_schema_is_built_and_checks_values_without_importing_dask():
    got = _run(_VALIDATE_A_FRAME)
    assert got == {"dask_before": False, "refused": True, "dask_frame": True}


def test_pandera_dask_types_imported_first_are_kept():
    got = _run("import json, pandera.typing.dask as t\nimport capplan\n"
               "print(json.dumps({'installed': t.DASK_INSTALLED, 'frame': hasattr(t, 'DataFrame')}))")
    assert got == {"installed": True, "frame": True}
