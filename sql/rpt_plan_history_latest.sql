-- for each planned month and pool, the months row of the latest run that had seen none of the month
-- ($months: list of YYYY-MM): its data ended before the month began (a run with no recorded data span:
-- made before the month began). The scheduled run at 06:00 on the 1st, from data up to the 31st, counts.
with ranked as (
    select m.*, r.created_utc, r.first_month,
           row_number() over (partition by m.month, m.pool order by r.created_utc desc, r.run_id desc) as rank_
    from plan_months m join plan_runs r using (run_id)
    where list_contains($months, m.month)
      and coalesce(r.data_to_utc, r.created_utc) < strptime(m.month || '-01', '%Y-%m-%d')
)
select * exclude (rank_) from ranked where rank_ = 1 order by month, pool;
