-- the first `$limit` loaded rows of file `$file_id` as stored (null: every row), in the canonical
-- columns of the pandera contract RequestRow (capplan.ingest.contract): the view `requests` without
-- `file_id` (tests/ingest/test_contract.py checks the columns). A bounded read: a systematic sample
-- over `rowid` scanned every row of the file (docs/ingest.md).
-- parameters: $file_id, $limit.
select * exclude (file_id)
from requests
where file_id = $file_id
limit $limit
