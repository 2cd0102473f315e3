-- every current partition's rows of partition_concurrency_hourly in the hours being re-merged, as the merge
-- SQL reads them (the columns of fct_concurrency_hourly).
select * exclude (partition_id)
from partition_concurrency_hourly
semi join partitioned_dirty_hours using (hour_utc)
