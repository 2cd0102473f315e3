-- hourly traffic per model (and '__all__') from the rollups, with every hour inside each model's span
-- [first hour with rows, last hour with rows]; an hour without rows has is_gap = true and, when
-- $empty_hours = 'missing', null measures (a logging gap), when 'zero', zero counts (true idle).
-- $model: one model, '__all__', or null for all of them; $since_utc: first hour kept, or null.
with

traffic as (
    select * from fct_traffic_hourly
    where $model::varchar is null or model = $model::varchar
),

concurrency as (
    select * from fct_concurrency_hourly
),

spans as (
    select model, min(hour_utc) as first_hour_utc, max(hour_utc) as last_hour_utc
    from traffic
    group by model
),

hours as (
    select model, unnest(generate_series(first_hour_utc, last_hour_utc, interval 1 hour)) as hour_utc
    from spans
),

filled as (
    select
        hours.hour_utc,
        hours.model,
        traffic.requests is null as is_gap,
        -- a gap is unknown ('missing') or a true zero ('zero'); measures of nothing stay null
        case when traffic.requests is not null then traffic.requests
             when $empty_hours::varchar = 'zero' then 0 end as requests,
        case when traffic.requests is not null then traffic.errors
             when $empty_hours::varchar = 'zero' then 0 end as errors,
        case when traffic.requests is not null then traffic.peak_second_requests
             when $empty_hours::varchar = 'zero' then 0 end as peak_second_requests,
        case when traffic.requests is not null then traffic.input_tokens_sum
             when $empty_hours::varchar = 'zero' then 0 end as input_tokens_sum,
        case when traffic.requests is not null then traffic.output_tokens_sum
             when $empty_hours::varchar = 'zero' then 0 end as output_tokens_sum,
        traffic.ttft_ms_sum / nullif(traffic.ttft_count, 0) as mean_ttft_ms,
        traffic.latency_ms_sum / nullif(traffic.latency_count, 0) as mean_latency_ms,
        concurrency.concurrency_peak
    from hours
    left join traffic using (hour_utc, model)
    left join concurrency using (hour_utc, model)
    where $since_utc::timestamp is null or hours.hour_utc >= $since_utc::timestamp
),

final as (
    select
        hour_utc,
        model,
        requests,
        errors,
        requests / 3600.0 as avg_qps,                         -- per hour -> per second
        peak_second_requests::double as peak_second_qps,      -- arrivals in one second = per second
        input_tokens_sum,
        output_tokens_sum,
        mean_ttft_ms,
        mean_latency_ms,
        -- Little's law L = lambda * W: [requests/s] * [s]
        requests / 3600.0 * mean_latency_ms / 1000.0 as concurrency_littles,
        coalesce(concurrency_peak, case when is_gap and $empty_hours::varchar = 'zero' then 0 end)
            as concurrency_measured_peak,
        is_gap
    from filled
)

select * from final order by model, hour_utc
