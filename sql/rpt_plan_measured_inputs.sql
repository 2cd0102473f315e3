-- the request-mix figures the monthly plan measures from the logs, over the most recent
-- $window_days days of data: the $window_days x 24 UTC hours ending with the hour of the newest
-- request, the models in $models (null: all models; a pool's models, capplan/plan/pools.py). the
-- window is the same for every pool: it ends with the newest request of any model. reads the mergeable roll-ups `plan_request_mix_hourly`
-- (sql/int_plan_request_mix_hourly.sql) and `plan_kv_tokens_hourly` (sql/int_plan_kv_tokens_hourly.sql),
-- of `requests` and of stored partitions alike; rows of one key may repeat (partitions sharing an hour).
-- successful requests only (2xx): failed ones are not the work the fleet is sized for.
-- the interruptible share over the same window is sql/rpt_plan_interruptible_share.sql.
-- output: one row; token figures [tokens/request], latency [s], kv quantile [tokens].
with request_mix as (
    select * from plan_request_mix_hourly
),

kv_counts as (
    select * from plan_kv_tokens_hourly
),

span as (
    select
        min(first_ts_utc)                                        as first_ts_utc,
        max(last_ts_utc)                                         as last_ts_utc,
        max(hour_utc) - to_days($window_days::integer)           as window_after_utc
    from request_mix
),

recent as (
    select m.*
    from request_mix as m, span as s
    where m.hour_utc > s.window_after_utc
      and ($models::varchar[] is null or list_contains($models::varchar[], m.model))
),

kv_recent as (
    select kv_tokens, sum(requests) as requests
    from kv_counts as k, span as s
    where k.hour_utc > s.window_after_utc
      and ($models::varchar[] is null or list_contains($models::varchar[], k.model))
    group by kv_tokens
),

kv_ranked as (
    -- the 0-based rank of the last request with each total, in ascending order
    select kv_tokens, sum(requests) over (order by kv_tokens) - 1 as last_rank
    from kv_recent
),

kv_position as (
    -- quantile_cont's position: (n - 1) * q, interpolated between the ranks either side
    select (sum(requests) - 1) * $kv_quantile::double as position
    from kv_recent
),

kv_quantile as (
    select
        (select min(kv_tokens) from kv_ranked where last_rank >= floor(position)) as below,
        (select min(kv_tokens) from kv_ranked where last_rank >= ceil(position))  as above,
        position - floor(position)                                                as fraction
    from kv_position
),

final as (
    select
        (select first_ts_utc from span)                               as first_ts_utc,
        (select last_ts_utc from span)                                as last_ts_utc,
        (select window_after_utc from span)                           as window_after_utc,
        coalesce(sum(successes), 0)::bigint                           as requests,
        (sum(input_tokens_sum) / sum(successes))::double              as input_tokens_per_request,
        (sum(output_tokens_sum) / sum(successes))::double             as output_tokens_per_request,
        -- ms -> s
        (sum(latency_ms_sum) / sum(latency_count))::double / 1000.0   as latency_s,
        coalesce(sum(latency_count), 0)::bigint                       as requests_with_latency,
        (select below + fraction * (above - below) from kv_quantile)::double
                                                                      as kv_tokens_per_sequence
    from recent
)

select * from final
