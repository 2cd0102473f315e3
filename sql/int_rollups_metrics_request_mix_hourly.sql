-- the request mix of the hours fed by metrics (capplan/metrics/: metrics_ledger), in the columns of
-- sql/int_plan_request_mix_hourly.sql, so the plan measures metrics hours like logged ones
-- (capplan.rollups). from fct_traffic_hourly's per-model rows (never '__all__'); tenant is unknown (null).
-- a metrics hour is whole: its first and last "request" are its first and last second (UTC).
-- successes are the success counter's; token and latency sums are over them, as for logged 2xx rows.
with metrics_hours as (
    select distinct hour_utc from metrics_ledger
),

traffic as (
    select t.*
    from fct_traffic_hourly as t
    inner join metrics_hours using (hour_utc)
    where t.model <> '__all__'
),

final as (
    select
        hour_utc,
        model,
        null::varchar                                   as tenant,
        hour_utc                                        as first_ts_utc,
        hour_utc + interval 3599 second                 as last_ts_utc,
        requests::bigint                                as requests,
        success_events::bigint                          as successes,
        input_tokens_sum::bigint                        as input_tokens_sum,   -- [tokens]
        output_tokens_sum::bigint                       as output_tokens_sum,  -- [tokens]
        latency_count::bigint                           as latency_count,
        latency_ms_sum::double                          as latency_ms_sum      -- [ms]
    from traffic
)

select * from final
