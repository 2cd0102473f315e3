-- the token-length histograms of the plan's measuring window, for the performance model's token mix:
-- hours after $window_after_utc (the window of sql/rpt_plan_measured_inputs.sql), the log models in
-- $models (null: every model, the '__all__' rows), from the profile's merged hourly histograms
-- (fct_histogram_hourly; every status, as the profile counts them, not only 2xx).
-- bin -1 holds [0, 1): zero tokens; bin k >= 0 holds [gamma^k, gamma^(k+1)), represented by its midpoint.
-- output: metric ('input_tokens' | 'output_tokens'), tokens [tokens], requests [requests].
with histogram as (
    select hour_utc, model, metric, bin, count
    from fct_histogram_hourly
    where metric in ('input_tokens', 'output_tokens')
),

recent as (
    select metric, bin, sum(count) as requests
    from histogram
    where hour_utc > $window_after_utc::timestamp
      and (($models::varchar[] is null and model = '__all__') or list_contains($models::varchar[], model))
    group by metric, bin
),

final as (
    select
        metric,
        case when bin < 0 then 0.0
             else (pow($gamma::double, bin) + pow($gamma::double, bin + 1)) / 2.0 end as tokens,
        requests::bigint                                                            as requests
    from recent
    where requests > 0
)

select * from final order by metric, tokens
