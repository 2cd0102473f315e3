-- every table and view of the attached database, with the time column an as-of view cuts on (null: none)
with relations as (
    select table_name, min(case when column_name in ('ts_utc', 'hour_utc', 'minute_utc', 'day_utc')
                                then column_name end) as time_column
    from information_schema.columns
    where table_catalog = 'as_of_source' and table_schema = 'main'
    group by table_name
)
select table_name, time_column from relations order by table_name
