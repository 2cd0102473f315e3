-- drop partition $partition_id's rows of partition_quarantine (its roll-up is being replaced).
delete from partition_quarantine where partition_id = $partition_id
