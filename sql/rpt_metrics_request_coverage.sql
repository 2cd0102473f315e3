-- requests of the hours fed by metrics (capplan/metrics/), which carry no per-request status, TTFT or latency: all of
-- them; those whose errors are unknown (no error counter: metrics_ledger.errors_measured not true), which the SLO
-- stage cannot count; those of hours without a TTFT histogram (a source exporting none, and rate series); and those
-- of rate series (source 'rates:...'), which have no latency histogram either.
with hours as (
    select
        hour_utc,
        sum(requests)                                       as requests,
        bool_and(coalesce(errors_measured, false))          as errors_measured,
        bool_or(source like 'rates:%')                      as rates
    from metrics_ledger
    group by hour_utc
),

ttft_hours as (
    select distinct hour_utc from fct_histogram_hourly where metric = 'ttft_ms'
),

final as (
    select
        coalesce(sum(h.requests), 0)::bigint                                            as requests,
        coalesce(sum(h.requests) filter (where not h.errors_measured), 0)::bigint       as status_unknown,
        coalesce(sum(h.requests) filter (where t.hour_utc is null), 0)::bigint          as ttft_unknown,
        coalesce(sum(h.requests) filter (where h.rates), 0)::bigint                     as rate_requests
    from hours as h
    left join ttft_hours as t using (hour_utc)
)

select * from final
