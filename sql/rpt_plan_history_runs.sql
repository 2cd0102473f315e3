-- every stored plan run, newest first
select * from plan_runs order by created_utc desc, run_id desc;
