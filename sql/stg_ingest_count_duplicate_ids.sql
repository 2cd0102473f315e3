-- how many request ids repeat within the file being ingested (sql/stg_ingest_duplicate_ids.sql).
select count(*) from ingest_duplicate_ids
