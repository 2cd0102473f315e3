-- the share of successful requests (2xx) that may run on spot, measured over the same window as
-- sql/rpt_plan_measured_inputs.sql: the $window_days x 24 UTC hours ending with the hour of the
-- newest request. a request is interruptible when it goes to a model in $models or comes from a
-- tenant in $tenants (the batch/offline tier named in [cost]). reads the mergeable roll-up
-- `plan_request_mix_hourly` (sql/int_plan_request_mix_hourly.sql), of `requests` and of partitions.
-- output: one row; interruptible_share [fraction] (0 without successful requests), requests [count].
with request_mix as (
    select * from plan_request_mix_hourly
),

span as (
    select max(hour_utc) - to_days($window_days::integer) as window_after_utc
    from request_mix
),

recent as (
    select
        m.successes,
        -- tenant is null when not logged: such a request is interruptible only by its model
        list_contains($models::varchar[], m.model)
            or coalesce(list_contains($tenants::varchar[], m.tenant), false) as is_interruptible
    from request_mix as m, span as s
    where m.hour_utc > s.window_after_utc
      -- $pool_models: the requests of one pool (null: every model)
      and ($pool_models::varchar[] is null or list_contains($pool_models::varchar[], m.model))
),

final as (
    select
        coalesce(sum(successes) filter (where is_interruptible) / sum(successes), 0.0)::double
                                                                as interruptible_share,
        coalesce(sum(successes), 0)::bigint                     as requests
    from recent
)

select * from final
