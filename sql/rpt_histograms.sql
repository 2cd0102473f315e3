-- log-binned histogram of one metric per period ($grain: 'hour' | 'day' | 'week' | 'month', UTC)
-- and model: the hourly bins summed; bin -1 is [0, 1), bin k >= 0 is [gamma^k, gamma^(k+1)).
with

histogram as (
    select date_trunc($grain::varchar, hour_utc) as period_start_utc, model, bin, count
    from fct_histogram_hourly
    where metric = $metric::varchar
      and ($model::varchar is null or model = $model::varchar)
      and ($since_utc::timestamp is null or hour_utc >= $since_utc::timestamp)
),

final as (
    select
        period_start_utc,
        model,
        case when bin < 0 then 0.0 else pow($gamma::double, bin) end as bin_lo,
        case when bin < 0 then 1.0 else pow($gamma::double, bin + 1) end as bin_hi,
        sum(count)::bigint as count
    from histogram
    group by period_start_utc, model, bin
)

select * from final order by model, period_start_utc, bin_lo
