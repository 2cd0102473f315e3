-- the CSV dialect DuckDB's sniffer finds in `$path` (a sample of a file's first lines, written by
-- capplan.ingest.readers when the file itself has a line over the maximum, on which the sniffer fails):
-- delimiter, quote, escape ('(empty)' for none), whether line 1 is a header, the column names.
-- parameters: $path.
select Delimiter, Quote, Escape, HasHeader, list_transform(Columns, lambda c: c.name) as column_names
from sniff_csv($path, sample_size = -1)
