-- a metrics_ledger created before errors_measured was recorded (session 7) gains the column (null: unknown).
alter table metrics_ledger add column if not exists errors_measured boolean
