-- record one stored hour of a metrics source.
insert into metrics_ledger (source, hour_utc, requests, ingested_at_utc, step_s, errors_measured)
values ($source, $hour_utc, $requests, $ingested_at_utc, $step_s, $errors_measured)
