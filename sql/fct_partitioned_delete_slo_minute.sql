-- drop partition $partition_id's rows of partition_slo_minute (its roll-up is being replaced).
delete from partition_slo_minute where partition_id = $partition_id
