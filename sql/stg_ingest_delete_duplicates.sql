-- delete the unmarked originals of the rows sql/stg_ingest_insert_duplicates.sql copied with rule
-- `request_id_duplicate`: the good rows of the file being ingested whose data row (numbered as
-- sql/stg_ingest_staged_view.sql numbers it) is in `ingest_duplicate_rows`. The last rule, so it never
-- overrides an earlier one; the copies leave `requests` and go to `quarantine` with the file's other bad rows.
-- parameters: $file_id, $row_offset (as there).
delete from request_rows
where file_id = $file_id
    and rule is null
    and coalesce(source_row, rowid + $row_offset) in (select source_row from ingest_duplicate_rows)
