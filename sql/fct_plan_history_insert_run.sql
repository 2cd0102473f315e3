-- record one plan run (capplan/history/store.py record_plan)
insert into plan_runs (run_id, created_utc, first_month, months, config_sha256, code_version, data_from_utc, data_to_utc)
values ($run_id, $created_utc, $first_month, $months, $config_sha256, $code_version, $data_from_utc, $data_to_utc);
