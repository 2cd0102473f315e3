-- hours of $hours that metrics already feed (metrics_ledger, capplan/metrics/), and the first of them: such hours
-- cannot also be fed by partitions.
select count(*) as hours, min(hour_utc) as first_utc
from metrics_ledger
where hour_utc in (select unnest($hours::timestamp[]))
