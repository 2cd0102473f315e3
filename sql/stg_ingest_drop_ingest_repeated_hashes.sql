-- drop the temp table `ingest_repeated_hashes` of one file's duplicate-id check: its temp space back before the
-- next file.
drop table if exists temp.ingest_repeated_hashes
