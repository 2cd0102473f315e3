-- the observed span of the current partitions' roll-ups: their first and last arrival (UTC); nulls when none.
select min(m.first_ts_utc) as first_utc, max(m.last_ts_utc) as last_utc
from partition_request_mix_hourly as m
join partition_ledger as l using (partition_id)
where l.status = 'current'
