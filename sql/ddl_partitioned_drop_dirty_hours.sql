-- the re-merge is done: forget its hours.
drop table if exists partitioned_dirty_hours
