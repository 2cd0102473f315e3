-- drop the temp view `ingest_staged` of the file just staged.
drop view if exists ingest_staged
