-- the models of `profile_source` arriving in [$start_utc - $lookback_us, $end_utc), sorted: the columns
-- of a window's roll-up (the lookback holds requests still in flight at $start_utc). [µs]
select distinct model
from profile_source
where ts_utc >= $start_utc::timestamp - to_microseconds($lookback_us) and ts_utc < $end_utc
order by model
