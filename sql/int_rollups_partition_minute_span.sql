-- first and last minute with requests (of $model, or all when null) in the stored partitions' SLO roll-ups (UTC).
select min(minute_utc) as first_minute_utc, max(minute_utc) as last_minute_utc
from partition_slo_minute
where $model::varchar is null or model = $model::varchar
