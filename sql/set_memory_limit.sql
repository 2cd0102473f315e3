-- cap DuckDB's memory (beyond it, it evicts cached blocks and spills to disk); parameter: $limit, e.g. '1024MiB'
set memory_limit = $limit
