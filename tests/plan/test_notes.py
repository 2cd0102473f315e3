"""capplan/plan/notes.py: the ingest notes the report shows."""

from __future__ import annotations

from capplan.plan import notes as plan


def test_ingest_notes_name_the_files_that_need_attention():
    from capplan.ingest import FileResult

    results = [FileResult("a.parquet", "s", "loaded", 10, 10, 0), FileResult("b.csv", "s", "unchanged"),
               FileResult("c.csv", "s", "loaded", 1000, 990, 10), FileResult("d.csv", "s", "error", message="bad header"),
               FileResult("e.csv", "s", "refused", message="content changed")]
    assert plan.ingest_notes(results) == [
        "ingest: c.csv: 10 of 1,000 rows quarantined (see the quarantine table)",
        "ingest error: d.csv: bad header", "ingest refused: e.csv: content changed"]
    assert plan.ingest_notes([FileResult("f.csv", "s", "error", message="f.csv: no such file")]) == [
        "ingest error: f.csv: no such file"]
