-- daily log-binned token-length histograms of served requests (capplan/drift/histogram.py), from the roll-up
-- `drift_daily_rollup` (sql/int_drift_daily_histogram.sql) of `requests` and of stored partitions:
-- rows of one key may repeat (a day fed by several partitions) and are summed.
-- parameters: $start_utc / $end_utc (null = open; UTC days).
with source_rollup as (
    select day_utc, model, metric, bin, requests, tokens_sum
    from drift_daily_rollup
    where ($start_utc::timestamp is null or day_utc >= $start_utc::timestamp)
      and ($end_utc::timestamp is null or day_utc < $end_utc::timestamp)
),

final as (
    select
        day_utc, model, metric, bin,
        sum(requests)::bigint   as requests,
        sum(tokens_sum)::bigint as tokens_sum  -- [tokens]
    from source_rollup
    group by all
    order by all
)

select * from final
