-- drop the temp view `ingest_checked` of the file just staged.
drop view if exists ingest_checked
