-- the TTFT histogram of the hours fed by Prometheus (capplan.metrics.ingest) with its own bucket bounds, per hour and
-- model: what the SLO stage reads a TTFT threshold off (sql/int_rollups_metrics_slo_hourly.sql). the profile's
-- fct_histogram_hourly keeps one bin per bucket and so loses the bounds a threshold is interpolated between.
create table if not exists metrics_ttft_buckets_hourly (
    hour_utc timestamp not null,  -- start of the hour, UTC
    model    varchar   not null,
    le_ms    double    not null,  -- the bucket's upper bound, seconds -> ms; 'infinity' for +Inf [ms]
    requests bigint    not null   -- requests of the hour whose TTFT was <= le_ms (cumulative, as Prometheus) [requests]
);
