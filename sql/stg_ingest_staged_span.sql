-- the first and last finite arrival time [UTC] among the rows of the file being ingested (view
-- `ingest_staged`); both null when no row has one. capplan.ingest.duplicates widens it by
-- `duplicate_id_window_s` into the span of earlier files' ids to compare with.
select min(ts_utc), max(ts_utc)
from ingest_staged
where ts_utc is not null and isfinite(ts_utc)
