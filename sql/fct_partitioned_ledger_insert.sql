-- record a partition's roll-up as current; returns its new partition_id.
insert into partition_ledger (
    source, path, files, size_bytes, stat_sha256, content_sha256, rows_read, rows_rolled_up, rows_quarantined,
    first_hour_utc, last_hour_utc, status, rolled_up_at_utc
)
values (
    $source, $path, $files, $size_bytes, $stat_sha256, $content_sha256, $rows_read, $rows_rolled_up,
    $rows_quarantined, $first_hour_utc, $last_hour_utc, 'current', $rolled_up_at_utc
)
returning partition_id
