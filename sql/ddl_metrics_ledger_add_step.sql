-- a metrics_ledger created before step_s was recorded (session 7) gains the column (null: unknown).
alter table metrics_ledger add column if not exists step_s integer
