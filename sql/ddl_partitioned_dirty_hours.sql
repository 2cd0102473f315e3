-- the UTC hours being re-merged from the partitions' roll-ups, for this connection only.
create or replace temp table partitioned_dirty_hours as
select unnest($hours::timestamp[]) as hour_utc
