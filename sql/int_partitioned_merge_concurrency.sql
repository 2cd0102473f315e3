-- merge partition roll-ups of fct_concurrency_hourly (the view `profile_parts`, same columns): the
-- peak in flight of an hour is the largest of each partition's own peak. exact when one partition's
-- requests alone are in flight in the hour; where requests of two partitions overlap (the first
-- minutes of a day partition, while the previous day's last requests finish) it is a lower bound.
with parts as (
    select hour_utc, model, concurrency_peak
    from profile_parts
),

final as (
    select hour_utc, model, max(concurrency_peak)::bigint as concurrency_peak  -- [requests in flight]
    from parts
    group by all
)

select * from final
