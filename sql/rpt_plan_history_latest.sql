-- for each planned month and pool, the months row of the latest run made before the month began
-- ($months: list of YYYY-MM). A run made on or after the 1st of the month knew part of it: not used.
with ranked as (
    select m.*, r.created_utc, r.first_month,
           row_number() over (partition by m.month, m.pool order by r.created_utc desc, r.run_id desc) as rank_
    from plan_months m join plan_runs r using (run_id)
    where list_contains($months, m.month)
      and r.created_utc < strptime(m.month || '-01', '%Y-%m-%d')
)
select * exclude (rank_) from ranked where rank_ = 1 order by month, pool;
