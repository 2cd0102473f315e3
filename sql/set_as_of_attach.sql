-- attach the database an as-of connection reads (read-only; capplan/history/as_of.py)
attach $path as as_of_source (read_only)
