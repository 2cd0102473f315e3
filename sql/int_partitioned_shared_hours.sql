-- UTC hours whose rows come from more than one current partition: their counts, sums and bins are exact,
-- their peak_second_requests only a lower bound (the max of each partition's own busiest second).
with

partition_hours as (
    select distinct partition_id, hour_utc from partition_traffic_hourly
),

final as (
    select hour_utc, count(*) as partitions
    from partition_hours
    group by hour_utc
    having count(*) > 1
)

select * from final order by hour_utc
