-- the in-flight spans [start_us, end_us) of requests that may overlap [$start_utc, $end_utc):
-- arrival to arrival + latency, epoch microseconds, for rows with latency_ms > 0. $lookback_us
-- (the longest latency) reaches back for requests that arrived before $start_utc and are still
-- in flight after it. The sweep over these spans (peak in flight per hour) runs in capplan/profile.py.
with

source as (
    select model, ts_utc, latency_ms
    from profile_source
    where latency_ms > 0
      and ts_utc >= $start_utc::timestamp - to_microseconds($lookback_us)
      and ts_utc < $end_utc::timestamp
),

final as (
    select
        model,
        epoch_us(ts_utc) as start_us,
        epoch_us(ts_utc) + (latency_ms * 1000)::bigint as end_us  -- ms -> us
    from source
)

select * from final
