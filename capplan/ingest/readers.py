"""Open one request-log file with DuckDB's reader as the temp view ``ingest_raw`` (CSV, Parquet, JSON lines).

``ingest_raw`` has the columns ``sql/stg_requests.sql`` parses: ``source_row``, ``raw`` (the
row as read), ``raw_error`` and ``raw_detail`` (a rule the reader already knows broken, and its
words), the timestamp in one of four forms and one ``<canonical>_raw`` column per canonical column,
built from the source's column mapping (:func:`capplan.ingest.columns.column_mapping`). Text formats
are read as VARCHAR, so the reader rejects nothing silently; Parquet columns the file already types
stay typed (the typed fast path). Optional columns the source lacks get their defaults. Owns the
reader settings (line size, buffer) and :class:`Raw`, what the reader gave and rejected.
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
from duckdb import CaseExpression, ColumnExpression, ConstantExpression, FunctionExpression

from capplan.ingest import queries
from capplan.ingest.columns import CANONICAL_COLUMNS, DEFAULT_STATUS, NUMERIC_COLUMNS, REQUIRED_COLUMNS, TEXT_COLUMNS
from capplan.ingest.errors import IngestError
from capplan.ingest.formats import MAX_COLUMNS, duckdb_path

_HEADERLESS = re.compile(r"column\d+")
#: CSV reader: the longest line read (a longer one is quarantined as line_too_long), and its buffer.
#: DuckDB's default buffer is 16 lines' worth (1 GiB here), which alone breaks a 1 GiB memory limit on
#: a gzip file; a buffer of one line's size still reads 60 MiB lines, in less memory and no more time
#: (docs/ingest.md).
_MAX_LINE_BYTES = 64 << 20
_CSV_BUFFER_BYTES = _MAX_LINE_BYTES
_NUMERIC_TYPES = {"tinyint", "smallint", "integer", "bigint", "hugeint", "utinyint", "usmallint", "uinteger",
                  "ubigint", "uhugeint", "float", "double", "decimal"}
_WALL_TYPES = {"timestamp", "timestamp_s", "timestamp_ms", "timestamp_ns", "date"}
#: the four forms of the timestamp in `ingest_raw` (sql/stg_requests.sql); exactly one is not null
_TS_FORMS = ("ts_utc_raw", "ts_utc_instant", "ts_utc_wall", "ts_utc_number")


@dataclass
class Raw:
    """The file opened as the temp view ``ingest_raw``; what the reader rejected."""

    defaulted: tuple[str, ...]
    columns: tuple[str, ...] = ()  # the source columns found (names in the file, or column0... without a header)
    header_lines: int = 0
    rejects: list[tuple[int, str, str]] = field(default_factory=list)  # (data row, rule, line)
    skipped: list[int] = field(default_factory=list)  # data rows the reader skipped: empty CSV lines


def open_raw(con: duckdb.DuckDBPyConnection, path: Path, kind: str, mapping: dict[str, str],
             positional: list[str]) -> Raw:
    """Register ``path`` (of ``kind`` csv|parquet|jsonl) as the temp view ``ingest_raw``.

    ``positional`` is the source column order of a CSV file without a header (the preset's).

    Raises
    ------
    IngestError
        When a required column is missing, or no line of a JSON lines file is an object.
    """
    if kind == "csv":
        return _open_csv(con, path, mapping, positional)
    return _open_parquet(con, path, mapping) if kind == "parquet" else _open_jsonl(con, path, mapping)


def _json_keys_present(path: Path, objects: duckdb.DuckDBPyRelation, wanted: set[str]) -> set[str]:
    """The keys of ``wanted`` that some line of the whole file has (not a sample: a key may start late).

    ``objects`` are the file's lines that are JSON objects (``source_row``, ``line``). One scan of
    the file before the staging pass, holding one flag per key (memory does not grow with the file).

    Raises
    ------
    IngestError
        No line is a JSON object, or a line repeats a key (which value counts would be a guess).
    """
    line = ColumnExpression("line")
    keys = FunctionExpression("json_keys", line)
    repeats = FunctionExpression("len", keys) != FunctionExpression("len", FunctionExpression("list_distinct", keys))
    wanted = sorted(wanted)
    found = objects.aggregate([
        FunctionExpression("count", ConstantExpression(1)),
        FunctionExpression("min", CaseExpression(repeats, ColumnExpression("source_row"))),
        *(FunctionExpression("bool_or", FunctionExpression("json_exists", line, ConstantExpression(_json_pointer(k))))
          for k in wanted)]).fetchall()[0]
    if not found[0]:
        raise IngestError(f"{path}: no line is a JSON object; expected one JSON object per line")
    if found[1] is not None:
        ((line_keys,),) = objects.filter(ColumnExpression("source_row") == ConstantExpression(found[1])).select(
            keys).fetchall()
        twice = sorted({k for k in line_keys if line_keys.count(k) > 1})
        raise IngestError(f"{path}: line {found[1]}: duplicate key {', '.join(map(repr, twice))}; "
                          "expected each key once per object")
    return {k for k, present in zip(wanted, found[2:]) if present}


def _json_pointer(key: str) -> str:
    return "/" + key.replace("~", "~0").replace("/", "~1")


def _ts_form(type_id: str | None) -> str:
    """Which `ingest_raw` timestamp column a source column of DuckDB type ``type_id`` feeds (None: text)."""
    if type_id == "timestamp with time zone":
        return "ts_utc_instant"
    if type_id in _WALL_TYPES:
        return "ts_utc_wall"
    return "ts_utc_number" if type_id in _NUMERIC_TYPES else "ts_utc_raw"


def _raw_columns(mapping: dict[str, str], present: Callable[[str], bool],
                 value: Callable[[str], duckdb.Expression], type_of: Callable[[str], str | None] = lambda c: None,
                 ) -> tuple[list[duckdb.Expression], tuple[str, ...]]:
    """The per-column expressions of `ingest_raw`; optional columns the source lacks get defaults.

    ``type_of(source column)`` is the reader's type id, or None for text formats. A column the
    reader already typed (Parquet) is passed on typed: the timestamp as a UTC instant, a wall time
    or a number, numeric columns as numbers, so the staging SQL needs no round trip through
    VARCHAR for them (the typed fast path). Anything else is cast to VARCHAR for the SQL to parse.
    The required columns are present (checked by :func:`_require` first).
    """
    exprs: list[duckdb.Expression] = []
    defaulted: list[str] = []
    ts_types = {name: duckdb.sqltype(t) for name, t in zip(_TS_FORMS, ("VARCHAR", "TIMESTAMP", "TIMESTAMP", "DOUBLE"))}
    varchar = ts_types["ts_utc_raw"]
    for canonical in CANONICAL_COLUMNS:
        src = mapping.get(canonical)
        if canonical == "ts_utc":
            # session TimeZone is UTC, so a timestamptz cast to timestamp is the UTC wall time
            form = _ts_form(type_of(src))
            exprs += [(value(src) if name == form else ConstantExpression(None)).cast(typed).alias(name)
                      for name, typed in ts_types.items()]
        elif src is not None and present(src):
            typed = canonical in NUMERIC_COLUMNS and type_of(src) in _NUMERIC_TYPES
            exprs.append((value(src) if typed else value(src).cast(varchar)).alias(f"{canonical}_raw"))
        else:
            defaulted.append(canonical)
            fallback = DEFAULT_STATUS if canonical == "status" else None  # model: $default_model in the SQL
            exprs.append(ConstantExpression(fallback).cast(varchar).alias(f"{canonical}_raw"))
    return exprs, tuple(defaulted)


def _require(path: Path, mapping: dict[str, str], found: Sequence[str], present: Callable[[str], bool]) -> None:
    missing = [f"{c} (source column {mapping.get(c, c)!r})" for c in REQUIRED_COLUMNS
               if c not in mapping or not present(mapping[c])]
    if missing:
        hint = " (one column only: wrong delimiter?)" if len(found) == 1 else ""
        if any(len(c) > 1 and c[0] == c[-1] == '"' for c in found):  # the reader took the quotes literally
            hint = (" (the names keep their double quotes: the file's quoting is broken, e.g. an unterminated "
                    "quote, so it was read without quoting)")
        raise IngestError(f"{path}: missing required column {', '.join(missing)}; found columns "
                          f"{list(found)[:20]}{hint}")


def _open_csv(con: duckdb.DuckDBPyConnection, path: Path, mapping: dict[str, str], order: list[str]) -> Raw:
    rel, long_lines = _read_csv(con, path)
    columns = rel.columns
    if len(columns) > MAX_COLUMNS:
        raise IngestError(f"{path}: {len(columns):,} columns; expected at most {MAX_COLUMNS:,}")
    header = not all(_HEADERLESS.fullmatch(c) for c in columns)
    if header:
        _refuse_repeated_names(path, columns, lambda: _read_csv(con, path, header=False)[0].limit(1).fetchall()[0],
                               "header")
    if not header:  # no header: columns are in the preset's canonical order
        positional = dict(zip(order, columns))
        mapping = {c: positional[mapping[c]] for c in mapping if mapping[c] in positional}
    _require(path, mapping, columns, lambda c: c in columns)
    # (not after the long-line fallback: the padded read's sniffer would fail on that line again)
    padded = None if long_lines else _read_csv_padded(con, path, rel, header)
    if padded is not None:
        rel = padded
    extras = list(rel.columns[len(columns):])
    # an empty field is '' in the padded read (null is padding): null again, as in the plain read
    field = (lambda c: FunctionExpression("nullif", ColumnExpression(c), ConstantExpression(""))) if padded else (
        ColumnExpression)
    exprs, defaulted = _raw_columns(mapping, lambda c: c in columns, field)
    raw = FunctionExpression("struct_pack", *[field(c).alias(c) for c in columns]).alias("raw")  # empty -> null
    rows = ConstantExpression(None).cast(duckdb.sqltype("BIGINT")).alias("source_row")  # numbered by position once written
    rule, detail = _csv_row_error(columns, extras, mapping, padded is not None,
                                  literal_quotes=not long_lines and _reads_quotes_literally(con, path))
    rel.select(rows, raw, rule.alias("raw_error"), detail.alias("raw_detail"), *exprs).create_view(
        "ingest_raw", replace=True)
    return Raw(defaulted, tuple(columns), header_lines=int(header))


def _reads_quotes_literally(con: duckdb.DuckDBPyConnection, path: Path) -> bool:
    """Whether DuckDB's sniffer reads ``path`` without quoting (a ``"`` in a field is then the file's own)."""
    probe = con.cursor()  # a cursor of its own: a DuckDB error inside the file's transaction would abort it
    try:
        (quote,) = queries.first(probe, "stg_ingest_sniff_csv_quote", {"path": duckdb_path(path)})
    except duckdb.Error:  # e.g. a line over the maximum: no check rather than a wrong one
        return False
    finally:
        probe.close()
    return quote in ("", "(empty)")


def _csv_row_error(columns: Sequence[str], extras: Sequence[str], mapping: dict[str, str],
                   padded: bool, literal_quotes: bool) -> tuple[duckdb.Expression, duckdb.Expression]:
    """(rule, detail) of a CSV row that only its fields show to break, else nulls (VARCHAR expressions).

    ``csv_wrong_column_count``: the padded read (:func:`_read_csv_padded`) pads a short line with nulls
    and gives fields beyond the header's in ``extras`` (DuckDB's reader drops trailing empty fields
    silently: ``a,b,c,,`` under a 3-column header); an empty field is '' there, so the line's fields
    are its non-null values. ``csv_unbalanced_quote``: when the file is read without quoting
    (``literal_quotes``, :func:`_reads_quotes_literally`), a text field with an odd number of ``"``
    (an unterminated quote read literally). In a quoted file ``"acme ""beta"`` is ``acme "beta``: one
    ``"``, and valid.
    """
    varchar = duckdb.sqltype("VARCHAR")
    cases: list[tuple[duckdb.Expression, str, duckdb.Expression]] = []
    if padded:
        wrong = ColumnExpression(columns[-1]).isnull()
        fields = CaseExpression(ColumnExpression(columns[0]).isnotnull(), ConstantExpression(1)).otherwise(
            ConstantExpression(0))
        for name in [*columns[1:], *extras]:
            fields = fields + CaseExpression(ColumnExpression(name).isnotnull(), ConstantExpression(1)).otherwise(
                ConstantExpression(0))
        for extra in extras:
            wrong = wrong | ColumnExpression(extra).isnotnull()
        beyond = FunctionExpression("list_filter", FunctionExpression(
            "list_value", *[ColumnExpression(e) for e in extras]), duckdb.LambdaExpression("v", ColumnExpression(
                "v").isnotnull()))
        detail = FunctionExpression("concat", ConstantExpression("line has "), fields, ConstantExpression(
            f" fields; expected the header's {len(columns)}"), CaseExpression(
                FunctionExpression("len", beyond) > ConstantExpression(0), FunctionExpression(
                    "concat", ConstantExpression(" (beyond them: "), FunctionExpression("to_json", beyond),
                    ConstantExpression("; empty fields count too)"))).otherwise(ConstantExpression("")))
        cases.append((wrong, "csv_wrong_column_count", detail))
    for canonical in TEXT_COLUMNS if literal_quotes else ():
        src = mapping.get(canonical)
        if src is None or src not in columns:
            continue
        value = ColumnExpression(src)
        quotes = FunctionExpression("length", value) - FunctionExpression(
            "length", FunctionExpression("replace", value, ConstantExpression('"'), ConstantExpression("")))
        odd = FunctionExpression("contains", value, ConstantExpression('"')) & (
            (quotes % ConstantExpression(2)) == ConstantExpression(1))
        cases.append((odd, "csv_unbalanced_quote", FunctionExpression(
            "concat", ConstantExpression(f"{canonical}: "), value, ConstantExpression(
                " has an odd number of double quotes (an unterminated quote, read literally); "
                "expected balanced quoting"))))
    if not cases:
        return ConstantExpression(None).cast(varchar), ConstantExpression(None).cast(varchar)
    rule = CaseExpression(cases[0][0], ConstantExpression(cases[0][1]))
    detail = CaseExpression(cases[0][0], cases[0][2])
    for when, name, words in cases[1:]:
        rule, detail = rule.when(when, ConstantExpression(name)), detail.when(when, words)
    return (rule.otherwise(ConstantExpression(None)).cast(varchar),
            detail.otherwise(ConstantExpression(None)).cast(varchar))


def _read_csv(con: duckdb.DuckDBPyConnection, path: Path, **options) -> tuple[duckdb.DuckDBPyRelation, bool]:
    """``path`` read by DuckDB's CSV reader, every column as VARCHAR, rejected lines recorded; whether it has
    a line over the maximum (the dialect then comes from the short lines).

    DuckDB's sniffer fails on a line over the maximum line size ("CSV Error on Line: 1", whatever
    the line). When it fails and the file has such a line, the dialect is sniffed from the file's
    first lines without the long ones (:func:`_sniff_short_lines`) and the file read with it, so the
    long line is rejected with its true line number and quarantined (``line_too_long``).
    """
    options = {"all_varchar": True, "store_rejects": True, "max_line_size": _MAX_LINE_BYTES,
               "buffer_size": _CSV_BUFFER_BYTES, **options}
    try:
        return con.read_csv(duckdb_path(path), **options), False
    except duckdb.Error:
        dialect = _sniff_short_lines(con, path)
        if dialect is None:
            raise
        return con.read_csv(duckdb_path(path), auto_detect=False, **dialect, **options), True


#: the padded CSV read's extra column: fields beyond the header's land there (or in DuckDB's columnN after it)
_EXTRA_FIELD = "__capplan_extra_field"
#: the padded read's null string: no field holds it, so an empty field is '' and only padding is null
_NO_NULL = "\x00capplan-no-null\x00"


def _read_csv_padded(con: duckdb.DuckDBPyConnection, path: Path, plain: duckdb.DuckDBPyRelation,
                     header: bool) -> duckdb.DuckDBPyRelation | None:
    """``path`` read with one more column than the ``plain`` read, short lines padded with nulls, no null string.

    DuckDB's reader drops trailing empty fields without a word (``a,b,c,,`` under a 3-column
    header loads as ``a,b,c``) and has no option to refuse them; this read shows them: fields beyond
    the header's are not null in the extra columns, a short line's missing fields are null, an empty
    field is ''. Serial (``parallel=False``): the parallel reader refuses padding with quoted line
    breaks; with one line's buffer it gained nothing here (docs/ingest.md). None when its sniffer
    reads the file otherwise (its first row differs from the plain read's): the plain read is then
    used, without this check.
    """
    columns = plain.columns
    options = {"names": [*columns, _EXTRA_FIELD], "header": header, "null_padding": True, "na_values": [_NO_NULL],
               "parallel": False}
    # probed on a cursor of its own: a DuckDB error inside the file's transaction would abort it
    probe = con.cursor()
    try:
        padded, _ = _read_csv(probe, path, **options)
        if len(padded.columns) <= len(columns):  # e.g. a Hive dt= folder: its column comes after the file's
            return None
        first = _read_csv(probe, path)[0].select(*[ColumnExpression(c).cast(duckdb.sqltype("VARCHAR"))
                                                   for c in columns]).limit(1).fetchall()
        # the plain read's first row: the first line with the header's fields, or more that are all empty
        kept = ColumnExpression(columns[-1]).isnotnull()
        for extra in padded.columns[len(columns):]:
            kept = kept & (ColumnExpression(extra).isnull() | (ColumnExpression(extra) == ConstantExpression("")))
        again = padded.filter(kept).select(*[FunctionExpression("nullif", ColumnExpression(c).cast(duckdb.sqltype(
            "VARCHAR")), ConstantExpression("")) for c in columns]).limit(1).fetchall()
    except duckdb.Error:
        return None
    finally:
        probe.close()
    return _read_csv(con, path, **options)[0] if first == again else None


def _sniff_short_lines(con: duckdb.DuckDBPyConnection, path: Path, lines: int = 1000) -> dict | None:
    """The CSV dialect of the first ``lines`` lines of ``path`` that are not over the maximum line size.

    None when none of those lines is over the maximum (then the sniffer failed for another reason).
    """
    reader = con.read_csv(duckdb_path(path), header=False, sep="\x1f", quotechar="", escapechar="",
                          columns={"line": "VARCHAR"}, store_rejects=True, auto_detect=False,
                          max_line_size=_MAX_LINE_BYTES, buffer_size=_CSV_BUFFER_BYTES)
    head = [line for (line,) in reader.limit(lines).fetchall()]
    if len(head) == lines or not queries.count(con, "stg_ingest_reject_errors_exist"):
        return None  # no line of the head was rejected (a head of `lines` lines may still have, but it sufficed)
    with tempfile.TemporaryDirectory(prefix="capplan-sniff-") as folder:
        sample = Path(folder) / "head.csv"
        sample.write_text("".join(f"{line or ''}\n" for line in head), encoding="utf-8")
        sep, quote, escape, has_header, names = queries.first(con, "stg_ingest_sniff_csv",
                                                              {"path": duckdb_path(sample)})
    empty = "(empty)"
    return {"sep": sep, "quotechar": "" if quote == empty else quote, "escapechar": "" if escape == empty else escape,
            "header": bool(has_header), "columns": {name: "VARCHAR" for name in names}}


def _refuse_repeated_names(path: Path, columns: Sequence[str], header: Callable[[], Sequence[str]],
                           where: str) -> None:
    """Refuse a file that names a column twice (DuckDB renames the second ``a`` to ``a_1``: the first won).

    ``header()`` reads the names as written (the CSV header line, the Parquet schema); called only
    when a name looks renamed. ``where`` names it in the message.
    """
    names = set(columns)
    if not any(m and m.group(1) in names for m in map(re.compile(r"(.+)_\d+").fullmatch, columns)):
        return
    written = list(header())
    twice = sorted({n for n in written if written.count(n) > 1})
    if twice:
        raise IngestError(f"{path}: the {where} names column {', '.join(map(repr, twice))} more than once; "
                          "expected each column once")


def _open_parquet(con: duckdb.DuckDBPyConnection, path: Path, mapping: dict[str, str]) -> Raw:
    rel = con.read_parquet(duckdb_path(path), file_row_number=True)
    columns = [c for c in rel.columns if c != "file_row_number"]
    _refuse_repeated_names(path, columns, lambda: pq.read_schema(path).names, "schema")
    _require(path, mapping, columns, lambda c: c in columns)
    types = {c: t.id for c, t in zip(rel.columns, rel.types)}
    exprs, defaulted = _raw_columns(mapping, lambda c: c in columns, ColumnExpression, types.get)
    raw = FunctionExpression("struct_pack", *[ColumnExpression(c).alias(c) for c in columns]).alias("raw")
    rows = (ColumnExpression("file_row_number") + ConstantExpression(1)).alias("source_row")
    none = ConstantExpression(None).cast(duckdb.sqltype("VARCHAR"))
    rel.select(rows, raw, none.alias("raw_error"), none.alias("raw_detail"), *exprs).create_view(
        "ingest_raw", replace=True)
    return Raw(defaulted, tuple(columns))


def _open_jsonl(con: duckdb.DuckDBPyConnection, path: Path, mapping: dict[str, str]) -> Raw:
    # One VARCHAR per line (0x1f cannot appear raw in valid JSON), so a malformed line is a
    # quarantined row instead of an error for the whole file; blank lines are not records.
    lines = con.read_csv(duckdb_path(path), header=False, sep="\x1f", quotechar="", escapechar="",
                         columns={"line": "VARCHAR"}, store_rejects=True, auto_detect=False,
                         max_line_size=_MAX_LINE_BYTES, buffer_size=_CSV_BUFFER_BYTES)
    lines.create_view("ingest_json_lines", replace=True)
    numbered = queries.relation(con, "stg_ingest_number_json_lines")
    valid = CaseExpression(FunctionExpression("json_valid", ColumnExpression("line")),
                           FunctionExpression("json_type", ColumnExpression("line")) == ConstantExpression("OBJECT")
                           ).otherwise(ConstantExpression(False))
    keys = _json_keys_present(path, numbered.filter(valid), set(mapping.values()))
    if not all(mapping.get(c) in keys for c in REQUIRED_COLUMNS):  # name what the file has, from its first lines
        sample = numbered.filter(valid).limit(1000).select(
            FunctionExpression("json_keys", ColumnExpression("line")).alias("k")).fetchall()
        _require(path, mapping, sorted({k for (ks,) in sample if ks for k in ks}), lambda c: c in keys)

    def extract(src: str) -> duckdb.Expression:
        return CaseExpression(valid, FunctionExpression(
            "json_extract_string", ColumnExpression("line"), ConstantExpression(_json_pointer(src))))

    exprs, defaulted = _raw_columns(mapping, lambda c: c in keys, extract)
    raw = CaseExpression(valid, ColumnExpression("line").cast(duckdb.sqltype("JSON"))).otherwise(
        FunctionExpression("to_json", ColumnExpression("line"))).alias("raw")
    error = CaseExpression(valid, ConstantExpression(None)).otherwise(
        ConstantExpression("json_malformed")).cast(duckdb.sqltype("VARCHAR")).alias("raw_error")
    numbered.filter(ColumnExpression("line").isnotnull()).select(
        ColumnExpression("source_row"), raw, error, ConstantExpression(None).cast(duckdb.sqltype("VARCHAR")).alias(
            "raw_detail"), *exprs).create_view("ingest_raw", replace=True)
    return Raw(defaulted, tuple(keys))
