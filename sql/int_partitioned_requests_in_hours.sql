-- rows of `requests` (file ingest) arriving in the UTC hours $hours, and the first of them: such hours
-- cannot also be fed by partitions.
select count(*) as rows, min(ts_utc) as first_utc
from requests
where date_trunc('hour', ts_utc) in (select unnest($hours::timestamp[]))
