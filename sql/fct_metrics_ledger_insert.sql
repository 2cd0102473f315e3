-- record one stored hour of a metrics source.
insert into metrics_ledger values ($source, $hour_utc, $requests, $ingested_at_utc)
