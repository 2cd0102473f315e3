-- the id of the file being ingested (sql/ddl_ingest_ledger.sql's sequence); drawn inside the file's
-- transaction, so a rolled-back file gives its id back.
select nextval('ingest_file_id_seq')
