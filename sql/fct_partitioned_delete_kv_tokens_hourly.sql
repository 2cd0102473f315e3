-- drop partition $partition_id's rows of partition_kv_tokens_hourly (its roll-up is being replaced).
delete from partition_kv_tokens_hourly where partition_id = $partition_id
