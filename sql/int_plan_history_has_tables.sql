-- 1 when both plan-history tables exist in this database
select count(*) = 2 from information_schema.tables
where table_name in ('plan_runs', 'plan_months') and table_schema = 'main' and table_catalog = current_database()
