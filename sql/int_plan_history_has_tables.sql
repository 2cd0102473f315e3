-- 1 when both plan-history tables exist
select count(*) = 2 from information_schema.tables where table_name in ('plan_runs', 'plan_months');
