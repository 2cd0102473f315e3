-- number the lines of a JSON lines file (temp view `ingest_json_lines`: one VARCHAR `line` per line,
-- read by capplan.ingest.readers) in file order, 1-based: a malformed line keeps its number too.
select row_number() over () as source_row, line
from ingest_json_lines
