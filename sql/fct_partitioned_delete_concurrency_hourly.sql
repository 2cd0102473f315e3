-- drop partition $partition_id's rows of partition_concurrency_hourly (its roll-up is being replaced).
delete from partition_concurrency_hourly where partition_id = $partition_id
