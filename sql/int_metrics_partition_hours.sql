-- rows of stored partition roll-ups (capplan/partitioned/) in the given hours: an hour is fed by partitions or
-- by metrics, never both.
select count(*) from partition_request_mix_hourly where hour_utc = any($hours)
