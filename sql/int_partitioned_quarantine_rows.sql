-- a partition's quarantined rows (sql/ddl_quarantine.sql) as the worker sends them back: raw as JSON text.
select path, row_number, rule, detail, raw::varchar as raw
from quarantine
order by path, row_number
