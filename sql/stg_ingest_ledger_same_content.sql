-- the first loaded file (id, path) whose content has SHA-256 `$content_sha256`, under any path: a
-- file with that content is `unchanged`, a no-op.
-- parameters: $content_sha256 (hex digest).
select file_id, path
from ingest_ledger
where content_sha256 = $content_sha256 and status = 'loaded'
order by file_id
limit 1
