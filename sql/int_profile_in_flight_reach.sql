-- reach of the in-flight sweep of the rows of `profile_source` arriving in [$start_utc, $end_utc):
-- the longest latency of any row arriving before $end_utc [ms] (the lookback: it may still run in the
-- range) and the last completion of the rows inside the range (UTC).
select
    coalesce(max(latency_ms), 0) as longest_latency_ms,
    max(ts_utc + to_microseconds((latency_ms * 1000)::bigint)) filter (where ts_utc >= $start_utc) as last_end_utc
from profile_source
where latency_ms > 0 and ts_utc < $end_utc
