-- rows that broke a rule; nothing is dropped silently.
create table if not exists quarantine (
    file_id      integer not null,  -- ingest_ledger.file_id
    path         varchar not null,  -- source file
    row_number   bigint  not null,  -- 1-based data row number in the file (header excluded)
    rule         varchar not null,  -- rule broken, e.g. 'timestamp_unparseable'
    detail       varchar not null,  -- human-readable: column, value, what was expected
    raw          json    not null   -- the raw values of the row, as read
);
