"""DuckDB SQL files, one query or DDL per file.

Files are named with a layer prefix: ``ddl_`` (tables), ``stg_`` (staging of raw
files), ``int_`` (intermediate), ``fct_`` (facts/rollups), ``rpt_`` (report
views) and ``set_`` (session settings). Values enter only as bound parameters (``?`` or ``$name``), never by
string formatting; file paths too, since DuckDB table functions accept them.
"""

from __future__ import annotations

from functools import cache
from importlib import resources


@cache
def load(name: str) -> str:
    """Return the text of ``sql/<name>.sql``.

    Raises
    ------
    FileNotFoundError
        If no such file ships with capplan; the message lists the valid names.
    """
    path = resources.files(__name__) / f"{name}.sql"
    if not path.is_file():
        valid = sorted(p.name.removesuffix(".sql") for p in resources.files(__name__).iterdir()
                       if p.name.endswith(".sql"))
        raise FileNotFoundError(f"no SQL file {name!r} in capplan's sql/; valid names: {valid}")
    return path.read_text(encoding="utf-8")
