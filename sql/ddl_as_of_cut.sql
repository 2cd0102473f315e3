-- the cut-off instant of an as-of connection (capplan/history/as_of.py): views below read only what came before it
create or replace table as_of_cut as select $cut_utc::timestamp as cut_utc;
