-- first and last arrival (UTC) of the rows of `profile_source` in [$start_utc, $end_utc); nulls if none.
select min(ts_utc) as first_utc, max(ts_utc) as last_utc
from profile_source
where ts_utc >= $start_utc and ts_utc < $end_utc
