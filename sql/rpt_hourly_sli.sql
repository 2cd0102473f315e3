-- request-based SLI per UTC hour and model (and '__all__'), read from the raw rows because the
-- TTFT threshold is a parameter. Success: status 2xx. Valid events: every row except 4xx client
-- errors other than 429 (the client's fault; 429 is our capacity, so it counts and is bad).
-- Good events: valid, 2xx and TTFT <= $ttft_threshold_ms (a 2xx with no TTFT logged counts as good).
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
        count(*) filter (where status < 400 or status >= 500 or status = 429) as valid_events,
        count(*) filter (where status >= 200 and status < 300) as success_events,
        count(*) filter (where status >= 200 and status < 300
                           and (ttft_ms is null or ttft_ms <= $ttft_threshold_ms::double)) as good_events
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
