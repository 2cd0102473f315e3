-- the UTC hours each file in $file_ids touches: the hours its rows arrive in (rows = arrivals)
-- and, with rows = 0, the later hours its requests are still in flight (latency_ms logged).
with

source as (
    select
        file_id,
        epoch_us(ts_utc) // 3600000000 as first_hour_epoch,
        -- last microsecond in flight; latency 0 or null stays in the arrival hour
        (epoch_us(ts_utc) + greatest(coalesce(latency_ms * 1000, 0)::bigint, 1) - 1) // 3600000000 as last_hour_epoch
    from requests
    where file_id in (select unnest($file_ids::integer[]))
),

arrivals as (
    select file_id, first_hour_epoch as hour_epoch, count(*) as rows
    from source
    group by all
),

in_flight as (
    select distinct file_id, unnest(range(first_hour_epoch + 1, last_hour_epoch + 1)) as hour_epoch, 0 as rows
    from (select distinct file_id, first_hour_epoch, last_hour_epoch from source where last_hour_epoch > first_hour_epoch)
),

final as (
    select file_id, make_timestamp(hour_epoch * 3600000000) as hour_utc, sum(rows)::bigint as rows
    from (select * from arrivals union all select * from in_flight)
    group by all
)

select * from final
