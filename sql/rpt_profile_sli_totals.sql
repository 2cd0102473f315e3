-- request-based SLI event totals of one scope over the whole window (the summary's figures), read from the
-- raw rows because the TTFT threshold is a parameter; the rules are those of sql/rpt_hourly_sli.sql (the macros
-- sli_valid, sli_success, sli_good: sql/ddl_macro_sli_*.sql), summed over its hours, without grouping by hour.
-- $model: one model or '__all__' (every row); $since_utc: first arrival kept, or null.
with

source as (
    select status, ttft_ms
    from requests
    where ($since_utc::timestamp is null or ts_utc >= $since_utc::timestamp)
      and ($model::varchar = '__all__' or model = $model::varchar)
),

final as (
    select
        count(*) filter (where sli_valid(status)) as valid_events,
        count(*) filter (where sli_success(status)) as success_events,
        count(*) filter (where sli_good(status, ttft_ms, $ttft_threshold_ms::double)) as good_events
    from source
)

select * from final
