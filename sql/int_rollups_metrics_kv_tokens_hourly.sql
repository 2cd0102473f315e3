-- KV tokens per sequence (input + output) of the hours fed by metrics, in the columns of
-- sql/int_plan_kv_tokens_hourly.sql. metrics give the two token-length histograms, not their joint:
-- each hour's requests are paired rank by rank (the i-th shortest prompt with the i-th shortest output,
-- the comonotone pairing), so a quantile of the sum is the sum of the two quantiles, the largest the
-- marginals allow for any pairing that keeps the ranks' order (modelled; docs/metrics.md).
-- a bin k of the profile's grid stands for 2 * gamma^(k + 1) / (1 + gamma), as in
-- sql/rpt_histogram_quantiles.sql; bin -1 for 0. parameter: $gamma (capplan/profile/bins.py).
with metrics_hours as (
    select distinct hour_utc from metrics_ledger
),

bins as (
    select
        h.hour_utc, h.model, h.metric,
        case when h.bin < 0 then 0.0
             else 2 * pow($gamma::double, h.bin + 1) / (1 + $gamma::double) end as tokens,  -- [tokens]
        sum(h.count) over (partition by h.hour_utc, h.model, h.metric order by h.bin) as cumulative
    from fct_histogram_hourly as h
    inner join metrics_hours using (hour_utc)
    where h.model <> '__all__' and h.metric in ('input_tokens', 'output_tokens')
),

inputs as (
    select hour_utc, model, tokens, cumulative from bins where metric = 'input_tokens'
),

outputs as (
    select hour_utc, model, tokens, cumulative from bins where metric = 'output_tokens'
),

edges as (
    -- every rank at which either histogram moves to its next bin
    select hour_utc, model, cumulative from inputs
    union
    select o.hour_utc, o.model, o.cumulative
    from outputs as o
    -- only up to the input's total: both count the same requests, bar counter noise
    where o.cumulative <= (select max(i.cumulative) from inputs as i
                           where i.hour_utc = o.hour_utc and i.model = o.model)
),

segments as (
    select
        hour_utc, model, cumulative,
        cumulative - coalesce(lag(cumulative) over (partition by hour_utc, model order by cumulative), 0) as requests
    from edges
),

paired as (
    -- the bin of each histogram holding the segment's last rank: the first bin whose cumulative reaches it
    select
        s.hour_utc, s.model, s.requests,
        (select min_by(i.tokens, i.cumulative) from inputs as i
         where i.hour_utc = s.hour_utc and i.model = s.model and i.cumulative >= s.cumulative) as input_tokens,
        (select min_by(o.tokens, o.cumulative) from outputs as o
         where o.hour_utc = s.hour_utc and o.model = s.model and o.cumulative >= s.cumulative) as output_tokens
    from segments as s
    where s.requests > 0
),

final as (
    select
        hour_utc,
        model,
        round(input_tokens + coalesce(output_tokens, 0))::bigint as kv_tokens,  -- [tokens]
        sum(requests)::bigint                                      as requests
    from paired
    group by all
)

select * from final
