-- {relation} has no time column (a ledger, a version stamp): visible whole in an as-of connection
create or replace view {relation} as
select * from as_of_source.main.{relation}
