-- every current partition's rows of partition_traffic_hourly in the hours being re-merged, as the merge
-- SQL reads them (the columns of fct_traffic_hourly).
select * exclude (partition_id)
from partition_traffic_hourly
semi join partitioned_dirty_hours using (hour_utc)
