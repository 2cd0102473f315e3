-- request-based SLI per UTC hour and model (and '__all__'), read from the raw rows because the
-- TTFT threshold is a parameter. The event rules are the SLO stage's, defined once as macros:
-- valid = sli_valid(status) (every row but a 4xx other than 408 and 429, sql/ddl_macro_sli_valid.sql),
-- success = sli_success(status) (2xx), good = sli_good(status, ttft_ms, $ttft_threshold_ms)
-- (2xx and TTFT <= the threshold, or no TTFT logged; sql/ddl_macro_sli_good.sql).
-- Per model and for '__all__' as two aggregations, each skipped when $model rules it out (a filter
-- on bound parameters is a constant when DuckDB plans): '__all__' alone, the summary's case, groups
-- the rows by hour only.
with

source as (
    select ts_utc, model, status, ttft_ms
    from requests
    where ($since_utc::timestamp is null or ts_utc >= $since_utc::timestamp)
      and ($model::varchar is null or $model::varchar = '__all__' or model = $model::varchar)
),

per_model as (
    -- skipped (a constant false filter) when only '__all__' is asked for
    select
        epoch_us(ts_utc) // 3600000000 as hour_epoch,
        model,
        count(*) filter (where sli_valid(status)) as valid_events,
        count(*) filter (where sli_success(status)) as success_events,
        count(*) filter (where sli_good(status, ttft_ms, $ttft_threshold_ms::double)) as good_events
    from source
    where $model::varchar is null or $model::varchar != '__all__'
    group by all
),

all_models as (
    select
        epoch_us(ts_utc) // 3600000000 as hour_epoch,
        '__all__' as model,
        count(*) filter (where sli_valid(status)) as valid_events,
        count(*) filter (where sli_success(status)) as success_events,
        count(*) filter (where sli_good(status, ttft_ms, $ttft_threshold_ms::double)) as good_events
    from source
    where $model::varchar is null or $model::varchar = '__all__'
    group by all
),

counts as (
    select * from per_model
    union all
    select * from all_models
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
