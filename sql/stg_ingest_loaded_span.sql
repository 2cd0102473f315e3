-- the first and last arrival time [UTC] of the loaded rows of file `$file_id` (view `requests`), for the
-- implausible-range notes (capplan.ingest.notes); both null when no row loaded.
-- parameters: $file_id.
select min(ts_utc), max(ts_utc)
from requests
where file_id = $file_id
