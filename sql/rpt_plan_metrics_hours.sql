-- the hours fed by metrics (metrics_ledger, capplan/metrics/) inside the plan's measuring window (the
-- $window_days x 24 UTC hours ending with the newest hour of `plan_request_mix_hourly`, as
-- sql/rpt_plan_measured_inputs.sql), and the coarsest interval their counts had [s] (null: not recorded).
with span as (
    select max(hour_utc) - to_days($window_days::integer) as window_after_utc
    from plan_request_mix_hourly
),

final as (
    select
        count(distinct l.hour_utc)::bigint  as hours,
        max(l.step_s)                       as step_s,   -- [s]
        count(*) filter (where l.source like 'rates:%')::bigint as rate_hours
    from metrics_ledger as l, span as s
    where l.hour_utc > s.window_after_utc
)

select * from final
