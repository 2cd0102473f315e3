-- the design peak the newest stored plan of pool $pool sized for: the highest P90 design peak over the
-- months of that run (requests/s, burst included, as plan_months stores it), with the run and its months.
-- no row when no stored plan covers the pool.
with pool_months as (
    select m.run_id, m.month, m.peak_qps_p90, r.created_utc
    from plan_months m join plan_runs r using (run_id)
    where m.pool = $pool and m.peak_qps_p90 is not null
),

newest as (
    select run_id from pool_months order by created_utc desc, run_id desc limit 1
),

final as (
    select
        run_id,
        max(peak_qps_p90)  as peak_qps_p90,  -- [requests/s]
        min(month)         as first_month,
        max(month)         as last_month
    from pool_months
    where run_id = (select run_id from newest)
    group by run_id
)

select * from final
