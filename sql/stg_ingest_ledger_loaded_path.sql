-- the file loaded now under `$path` (ledger status 'loaded'), if any: its id and content hash. A path
-- seen before is hashed first: the same content under it is `unchanged`; other content (even content
-- loaded under another path) is a change of this path, refused or replacing that file.
-- parameters: $path (absolute).
select file_id, content_sha256
from ingest_ledger
where path = $path and status = 'loaded'
