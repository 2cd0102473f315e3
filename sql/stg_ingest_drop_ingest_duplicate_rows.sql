-- drop the temp table `ingest_duplicate_rows` of one file's duplicate-id check: its temp space back before the
-- next file.
drop table if exists temp.ingest_duplicate_rows
