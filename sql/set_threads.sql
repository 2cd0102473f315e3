-- DuckDB worker threads of this connection; parameter: $threads [count]
set threads = $threads
