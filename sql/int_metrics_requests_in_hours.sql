-- rows of ingested request logs in the given hours (an hour is fed by logs or by metrics, never both).
select count(*) from requests where date_trunc('hour', ts_utc) = any($hours)
