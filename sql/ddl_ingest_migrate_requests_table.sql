-- migrate an old `requests` table (good rows only, from before `request_rows` existed) in place:
-- renamed `request_rows`, the NOT NULL constraints of its old required columns dropped (a bad row's
-- tokens are null) and the bad-row columns of sql/ddl_request_rows.sql added. Its rows stay as they
-- are (their `rule` is null, so the view `requests` shows them all). One migration script, run by
-- capplan.ingest.tables inside one transaction together with sql/ddl_requests.sql (the view comes
-- with the rename: a reader never finds no `requests`). DuckDB's ALTER TABLE takes one action per
-- statement, hence the list. Fixed text: no value comes from outside.
alter table requests rename to request_rows;
alter table request_rows alter column ts_utc drop not null;
alter table request_rows alter column input_tokens drop not null;
alter table request_rows alter column output_tokens drop not null;
alter table request_rows alter column model drop not null;
alter table request_rows alter column status drop not null;
alter table request_rows add column source_row bigint;
alter table request_rows add column rule varchar;
alter table request_rows add column detail varchar;
alter table request_rows add column raw_json json;
