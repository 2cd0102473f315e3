-- optional canonical columns some ingested file lacked (the ingest gave them a default or null), with the
-- rows loaded from such files and the rows loaded in all, over the current file versions (status 'loaded').
with

files as (
    select rows_loaded, defaulted_columns from ingest_ledger where status = 'loaded'
),

total as (
    select coalesce(sum(rows_loaded), 0)::bigint as rows_loaded from files
),

per_column as (
    select unnest(defaulted_columns) as column_name, sum(rows_loaded)::bigint as rows_defaulted
    from files
    group by 1
),

final as (
    select per_column.column_name, per_column.rows_defaulted, total.rows_loaded
    from per_column cross join total
)

select * from final order by column_name
