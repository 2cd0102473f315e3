-- {relation} as it was known at the cut-off: rows whose {time_column} is before it (capplan/history/as_of.py).
-- {relation} and {time_column} are identifiers read from the attached database's catalogue and checked
-- against a strict pattern before they are placed here; DuckDB binds values, not identifiers.
create or replace view {relation} as
select * from as_of_source.main.{relation}
where {time_column} < (select cut_utc from as_of_cut)
