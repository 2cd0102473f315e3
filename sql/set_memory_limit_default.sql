-- DuckDB's default memory limit (a share of RAM)
reset memory_limit
