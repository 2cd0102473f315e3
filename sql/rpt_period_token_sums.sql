-- requests and token sums per UTC period ($grain: 'hour' | 'day' | 'week' | 'month' | 'all') and
-- model, from fct_traffic_hourly: the exact means beside the histogram percentiles. $models (null: unused):
-- the union of these log models, summed and reported as model $model (as sql/rpt_histogram_quantiles.sql).
with

traffic as (
    select
        date_trunc(nullif($grain::varchar, 'all'), hour_utc) as period_start_utc,
        case when $models::varchar[] is null then model else $model::varchar end as model,
        requests, input_tokens_sum, output_tokens_sum
    from fct_traffic_hourly
    where (case when $models::varchar[] is null then $model::varchar is null or model = $model::varchar
                else list_contains($models::varchar[], model) end)
      and ($since_utc::timestamp is null or hour_utc >= $since_utc::timestamp)
),

final as (
    select
        period_start_utc,
        model,
        sum(requests)::bigint as requests,
        sum(input_tokens_sum)::bigint as input_tokens_sum,
        sum(output_tokens_sum)::bigint as output_tokens_sum
    from traffic
    group by all
)

select * from final order by model, period_start_utc
