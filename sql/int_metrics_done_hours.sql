-- hours a metrics source has already stored, and whether another source stored them.
select hour_utc, source = $source as own
from metrics_ledger
where hour_utc >= $start_utc and hour_utc < $end_utc
