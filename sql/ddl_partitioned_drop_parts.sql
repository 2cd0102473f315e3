-- the re-merge is done: drop the view of the partition rows it merged.
drop view if exists profile_parts
