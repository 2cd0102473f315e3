-- mark the ledger row of file `$file_id` as replaced by a newer version of its path (same transaction
-- as the new version's load).
-- parameters: $file_id.
update ingest_ledger
set status = 'replaced'
where file_id = $file_id
