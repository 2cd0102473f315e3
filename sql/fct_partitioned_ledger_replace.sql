-- mark partition $partition_id's roll-up as superseded by a newer one.
update partition_ledger set status = 'replaced' where partition_id = $partition_id
