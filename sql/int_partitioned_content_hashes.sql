-- the SHA-256 of each file a worker loaded, in path order: hashed together into the partition's content hash.
select content_sha256 from ingest_ledger order by path
