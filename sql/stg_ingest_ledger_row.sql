-- the ledger row of one ingested file, written in the same transaction as its rows.
-- rows_read is defined as loaded + quarantined, so the two always reconcile.
insert into ingest_ledger (
    file_id, path, source, size_bytes, content_sha256, rows_read, rows_loaded, rows_quarantined,
    defaulted_columns, status, ingested_at_utc, notes
)
select
    $file_id,
    $path,
    $source,
    $size_bytes,
    $content_sha256,
    $rows_loaded + $rows_quarantined,
    $rows_loaded,
    $rows_quarantined,
    cast($defaulted_columns as varchar[]),
    'loaded',
    cast($ingested_at_utc as timestamp),  -- UTC
    cast($notes as varchar[])  -- implausible time range etc. (capplan.ingest.notes)
