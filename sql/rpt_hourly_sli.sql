-- request-based SLI per UTC hour and model (and '__all__'), read from the raw rows because the
-- TTFT threshold is a parameter. The event rules are the SLO stage's, defined once as macros:
-- valid = sli_valid(status) (every row but a 4xx other than 408 and 429, sql/ddl_macro_sli_valid.sql),
-- success = sli_success(status) (2xx), good = sli_good(status, ttft_ms, $ttft_threshold_ms)
-- (2xx and TTFT <= the threshold, or no TTFT logged; sql/ddl_macro_sli_good.sql).
with

source as (
    select ts_utc, model, status, ttft_ms
    from requests
    where ($since_utc::timestamp is null or ts_utc >= $since_utc::timestamp)
      and ($model::varchar is null or $model::varchar = '__all__' or model = $model::varchar)
),

counts as (
    select
        epoch_us(ts_utc) // 3600000000 as hour_epoch,
        coalesce(model, '__all__') as model,
        count(*) filter (where sli_valid(status)) as valid_events,
        count(*) filter (where sli_success(status)) as success_events,
        count(*) filter (where sli_good(status, ttft_ms, $ttft_threshold_ms::double)) as good_events
    from source
    group by grouping sets ((hour_epoch, model), (hour_epoch))
),

final as (
    select
        make_timestamp(hour_epoch * 3600000000) as hour_utc,
        model,
        valid_events,
        good_events,
        success_events::double / nullif(valid_events, 0) as success_rate,
        good_events::double / nullif(valid_events, 0) as good_fraction
    from counts
    where $model::varchar is null or model = $model::varchar
)

select * from final order by model, hour_utc
