-- the text of one DuckDB setting, e.g. memory_limit ('1.0 GiB'); parameter: $name
select current_setting($name::varchar) as value
