-- first and last arrival (UTC) in `requests`, of one model or of all: the span an SLO's rolling window
-- is clipped to (capplan/slo/status.py adds the stored partitions' span to it).
-- parameters: $model (null = all models).
select min(ts_utc) as first_ts_utc, max(ts_utc) as last_ts_utc
from requests
where $model::varchar is null or model = $model::varchar
