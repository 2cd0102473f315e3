-- drop the central rows of fct_traffic_hourly in the hours being re-merged (partitioned_dirty_hours).
delete from fct_traffic_hourly where hour_utc in (select hour_utc from partitioned_dirty_hours)
