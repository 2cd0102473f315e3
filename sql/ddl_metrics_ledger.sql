-- hours ingested from Prometheus (capplan.metrics.ingest) or a rate series (capplan.metrics.rates): one row per
-- source and completed UTC hour.
create table if not exists metrics_ledger (
    source          varchar   not null,  -- [[metrics.sources]] name, or 'rates:<file name>'
    hour_utc        timestamp not null,  -- start of the hour, UTC
    requests        bigint    not null,  -- requests of the hour over all models [requests]
    ingested_at_utc timestamp not null,  -- when the hour was stored, UTC
    step_s          integer,             -- the finest interval of its counts: scrape step or rate interval [s]
    errors_measured boolean              -- an error counter fed the hour's errors (else errors are unknown, stored 0)
);
