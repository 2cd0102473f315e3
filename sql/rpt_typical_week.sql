-- the typical week per model: 168 hourly factors, hour_of_week 0 = Monday 00:00 local time in $tz.
-- factor = mean requests in that hour of the week / mean requests over all observed hours
-- (gap hours with null requests are left out); factors average 1 over a week with no gaps.
with

hourly as (
    select
        -- UTC -> local wall-clock time in $tz
        timezone($tz::varchar, hour_utc::timestamptz) as hour_local,
        model, requests
    from profile_hourly
    where requests is not null
),

by_hour_of_week as (
    select
        model,
        (isodow(hour_local) - 1) * 24 + hour(hour_local) as hour_of_week,
        avg(requests) as mean_requests,
        count(*) as observed_hours
    from hourly
    group by all
),

overall as (
    select model, avg(requests) as mean_requests from hourly group by model
),

grid as (
    select model, unnest(range(168)) as hour_of_week from overall
),

final as (
    select
        grid.model,
        grid.hour_of_week::integer as hour_of_week,
        coalesce(by_hour_of_week.observed_hours, 0) as observed_hours,
        by_hour_of_week.mean_requests / 3600.0 as avg_qps,          -- per hour -> per second
        by_hour_of_week.mean_requests / nullif(overall.mean_requests, 0) as factor
    from grid
    join overall using (model)
    left join by_hour_of_week using (model, hour_of_week)
)

select * from final order by model, hour_of_week
