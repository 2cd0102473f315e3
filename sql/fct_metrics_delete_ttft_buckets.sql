-- drop the TTFT bucket rows of the hours a metrics chunk is about to store.
delete from metrics_ttft_buckets_hourly where hour_utc = any($hours)
