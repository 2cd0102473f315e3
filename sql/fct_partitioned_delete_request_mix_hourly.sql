-- drop partition $partition_id's rows of partition_request_mix_hourly (its roll-up is being replaced).
delete from partition_request_mix_hourly where partition_id = $partition_id
