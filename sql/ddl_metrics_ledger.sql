-- hours ingested from Prometheus (capplan.metrics.ingest): one row per source and completed UTC hour.
create table if not exists metrics_ledger (
    source          varchar   not null,  -- [[metrics.sources]] name
    hour_utc        timestamp not null,  -- start of the hour, UTC
    requests        bigint    not null,  -- requests of the hour over all models [requests]
    ingested_at_utc timestamp not null   -- when the hour was stored, UTC
);
