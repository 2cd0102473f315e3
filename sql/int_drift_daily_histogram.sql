-- daily log-binned token-length histograms of served requests, per model and metric, with the
-- token sum of each bin so window means are exact (not bin midpoints).
-- served = HTTP 2xx: a failed request has no output tokens and would pull the output mix down
-- during an incident. Bin k = floor(ln(tokens) * $inv_ln_gamma) holds [gamma^k, gamma^(k+1)) with
-- gamma = 1.02^9: nine bins of the profile's grid (capplan/profile/bins.py) merged, i.e. profile bin // 9
-- (capplan.rollups.drift_histogram_params). 0 tokens go to bin -1. Days are UTC calendar days.
-- parameters: $inv_ln_gamma = 1 / ln(gamma); $start_utc / $end_utc (null = open).
with source_requests as (
    select ts_utc::date as day_utc, model, input_tokens, output_tokens
    from requests
    where sli_success(status)
      and ($start_utc::timestamp is null or ts_utc >= $start_utc::timestamp)
      and ($end_utc::timestamp is null or ts_utc < $end_utc::timestamp)
),

long_form as (
    select day_utc, model, 'input_tokens' as metric, input_tokens as tokens from source_requests
    union all
    select day_utc, model, 'output_tokens' as metric, output_tokens as tokens from source_requests
),

binned as (
    select
        day_utc, model, metric, tokens,
        greatest(floor(ln(greatest(tokens::double, 0.5)) * $inv_ln_gamma::double), -1)::smallint as bin  -- double: a 0.5 literal makes the logs DECIMAL
    from long_form
),

final as (
    select
        day_utc, model, metric, bin,
        count(*)::bigint as requests,
        sum(tokens)::bigint as tokens_sum  -- [tokens]
    from binned
    group by all
    order by all
)

select * from final
