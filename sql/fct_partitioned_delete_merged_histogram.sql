-- drop the central histogram rows (fct_histogram_hourly_bins) in the hours being re-merged (partitioned_dirty_hours).
delete from fct_histogram_hourly_bins where hour_utc in (select hour_utc from partitioned_dirty_hours)
