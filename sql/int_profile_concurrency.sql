-- peak requests in flight per UTC hour and model (and '__all__'), for hours in [$start_utc, $end_utc).
-- A request is in flight over [arrival, arrival + latency) (half-open: a request ending at t does not
-- overlap one arriving at t); one that crosses an hour boundary counts in every hour it overlaps.
-- Rows without latency_ms are left out. $lookback_us (the longest latency) reaches back for requests
-- that arrived before $start_utc but are still in flight after it. Not mergeable across partitions
-- (a request in flight across a partition boundary is seen by one side only).
with

spans as (
    select
        model,
        epoch_us(ts_utc) as start_us,
        epoch_us(ts_utc) + (latency_ms * 1000)::bigint as end_us  -- ms -> us
    from profile_source
    where latency_ms > 0
      and ts_utc >= $start_utc::timestamp - to_microseconds($lookback_us)
      and ts_utc < $end_utc::timestamp
),

pieces as (
    -- most requests lie inside one hour; only the crossing ones are cut into one piece per hour
    select model, start_us // 3600000000 as hour_epoch, start_us, end_us
    from spans
    where start_us // 3600000000 = (end_us - 1) // 3600000000
    union all
    select
        model,
        hour_epoch,
        greatest(start_us, hour_epoch * 3600000000) as start_us,
        least(end_us, (hour_epoch + 1) * 3600000000) as end_us
    from (
        select model, start_us, end_us,
            unnest(range(start_us // 3600000000, (end_us - 1) // 3600000000 + 1)) as hour_epoch
        from spans
        where start_us // 3600000000 < (end_us - 1) // 3600000000
    )
),

in_range as (
    select * from pieces
    where hour_epoch >= epoch_us($start_utc::timestamp) // 3600000000
      and hour_epoch < (epoch_us($end_utc::timestamp) + 3599999999) // 3600000000
),

events as (
    select hour_epoch, model, start_us as t_us, 1 as delta from in_range
    union all
    select hour_epoch, model, end_us as t_us, -1 as delta from in_range
),

events_all as (
    select * from events
    union all
    select hour_epoch, '__all__' as model, t_us, delta from events
),

running as (
    -- ends sort before starts at the same instant (delta -1 < +1): intervals are half-open
    select hour_epoch, model,
        sum(delta) over (partition by hour_epoch, model order by t_us, delta rows unbounded preceding) as in_flight
    from events_all
),

final as (
    select make_timestamp(hour_epoch * 3600000000) as hour_utc, model, max(in_flight)::bigint as concurrency_peak
    from running
    group by all
)

select * from final
