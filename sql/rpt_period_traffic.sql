-- daily or weekly traffic ($grain: 'day' | 'week'; weeks start on Monday) per model, in the local
-- time zone $tz, from the gap-filled hourly frame registered as `profile_hourly`
-- (rpt_hourly_traffic). Averages run over observed seconds (exposure_s, capplan/profile/exposure.py:
-- a partly observed first or last hour counts for its observed part): a gap hour counts only when
-- empty_hours = 'zero' gave it zero requests. A local day has 23 or 25 hours on DST changes.
with

hourly as (
    select
        -- UTC -> local wall-clock time in $tz
        timezone($tz::varchar, hour_utc::timestamptz) as hour_local,
        model, requests, avg_qps, peak_second_qps, is_gap,
        case when is_gap then 3600.0 else exposure_s end as exposure_s  -- a 'zero' gap hour was idle, observed
    from profile_hourly
),

periods as (
    select date_trunc($grain::varchar, hour_local) as period_start_local, *
    from hourly
),

days as (
    select period_start_local, model, date_trunc('day', hour_local) as day_local, sum(requests) as requests
    from periods
    group by all
),

busiest_day as (
    select period_start_local, model, isodow(arg_max(day_local, requests)) as busiest_day_of_week
    from days
    group by all
),

totals as (
    select
        period_start_local,
        model,
        sum(requests)::bigint as requests,
        count(requests) as observed_hours,
        count(*) filter (where is_gap) as gap_hours,
        -- the average runs over hours with a rate (observed for 600 s or more): their requests over their seconds
        sum(requests) filter (where avg_qps is not null) as rated_requests,
        sum(exposure_s) filter (where avg_qps is not null) as observed_s,
        max(avg_qps) as peak_hour_qps,                            -- per observed second
        max(peak_second_qps) as peak_second_qps,
        hour(arg_max(hour_local, requests)) as busiest_hour_of_day
    from periods
    group by all
),

final as (
    select
        totals.period_start_local,
        totals.model,
        totals.requests,
        totals.observed_hours,
        totals.gap_hours,
        totals.rated_requests / nullif(totals.observed_s, 0) as avg_qps,
        totals.peak_hour_qps,
        totals.peak_second_qps,
        totals.peak_hour_qps / nullif(totals.rated_requests / nullif(totals.observed_s, 0), 0)
            as peak_hour_to_avg,
        totals.peak_second_qps / nullif(totals.rated_requests / nullif(totals.observed_s, 0), 0)
            as peak_second_to_avg,
        totals.busiest_hour_of_day,
        busiest_day.busiest_day_of_week
    from totals
    join busiest_day using (period_start_local, model)
)

select * from final order by model, period_start_local
