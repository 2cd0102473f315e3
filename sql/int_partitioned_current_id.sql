-- the ledger id of the current roll-up of partition $path of source $source (no row if none).
select partition_id from partition_ledger
where source = $source and path = $path and status = 'current'
