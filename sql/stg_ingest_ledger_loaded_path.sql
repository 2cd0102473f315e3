-- the file id under which `$path` is loaded now (ledger status 'loaded'), if any: a path seen before
-- is hashed first, and new content under it is refused or replaces that file.
-- parameters: $path (absolute).
select file_id
from ingest_ledger
where path = $path and status = 'loaded'
