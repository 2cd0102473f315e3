-- drop partition $partition_id's rows of partition_drift_daily_histogram (its roll-up is being replaced).
delete from partition_drift_daily_histogram where partition_id = $partition_id
