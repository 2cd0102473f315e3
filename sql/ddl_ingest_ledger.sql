-- one row per ingested file version; written in the same transaction as its rows.
create sequence if not exists ingest_file_id_seq start 1;
create table if not exists ingest_ledger (
    file_id           integer   primary key default nextval('ingest_file_id_seq'),
    path              varchar   not null,  -- absolute path as given (globs expanded)
    source            varchar   not null,  -- source name from config or --source
    size_bytes        bigint    not null,
    content_sha256    varchar   not null,  -- hex digest of the file's bytes
    rows_read         bigint    not null,
    rows_loaded       bigint    not null,
    rows_quarantined  bigint    not null,
    defaulted_columns varchar[] not null,  -- optional canonical columns the source lacked
    status            varchar   not null,  -- 'loaded' | 'replaced' (superseded by a newer version)
    ingested_at_utc   timestamp not null
);
