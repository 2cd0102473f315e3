-- where DuckDB spills beyond its memory limit; parameter: $path (a folder)
set temp_directory = $path
