-- the observed span of the hours fed by metrics (metrics_ledger, capplan/metrics/): whole hours, from the start
-- of the first to the end of the last (UTC); nulls when none.
select min(hour_utc) as first_utc, max(hour_utc) + interval 1 hour as last_utc
from metrics_ledger
