-- quantiles of a metric per period ($grain: 'hour' | 'day' | 'week' | 'month', UTC; 'all' = the whole window, period null) and model,
-- read from the log-binned hourly histograms: the q-quantile is the bin holding the ceil(q * n)-th
-- smallest value, reported as 2 * lo * hi / (lo + hi), within (gamma - 1) / (gamma + 1) of any value
-- in [lo, hi); bin -1 ([0, 1)) reports 0. $metrics: metric names; $quantiles: list of q in [0, 1].
-- $models (null: unused): the union of these log models, merged bin by bin and reported as model $model
-- (a pool: its models' requests as one distribution).
with

histogram as (
    select
        date_trunc(nullif($grain::varchar, 'all'), hour_utc) as period_start_utc,
        case when $models::varchar[] is null then model else $model::varchar end as model,
        metric, bin, count
    from fct_histogram_hourly
    where (case when $models::varchar[] is null then $model::varchar is null or model = $model::varchar
                else list_contains($models::varchar[], model) end)
      and ($since_utc::timestamp is null or hour_utc >= $since_utc::timestamp)
      and list_contains($metrics::varchar[], metric)  -- a filter, not a join: pushed into the view's metric branches
),

merged as (
    -- days, weeks and months are sums of hours: that is what makes the bins mergeable
    select period_start_utc, model, metric, bin, sum(count) as count
    from histogram
    group by all
),

cumulative as (
    select
        *,
        sum(count) over (partition by period_start_utc, model, metric order by bin rows unbounded preceding) as count_le,
        sum(count) over (partition by period_start_utc, model, metric) as total
    from merged
),

ranked as (
    select period_start_utc, model, metric, q, bin, count_le, total
    from cumulative, (select unnest($quantiles::double[]) as q)
    where count_le >= greatest(ceil(q * total), 1)
),

final as (
    select
        period_start_utc,
        model,
        metric,
        q,
        case when min(bin) < 0 then 0.0
             else 2 * pow($gamma::double, min(bin) + 1) / (1 + $gamma::double) end as value,
        any_value(total) as count
    from ranked
    group by period_start_utc, model, metric, q
)

select * from final order by model, metric, period_start_utc, q
