-- the quote character DuckDB's sniffer finds in the CSV file `$path` ('(empty)' when the file is read
-- without quoting, so a `"` in a field is literal): capplan.ingest.readers checks for unterminated quotes
-- only then. parameters: $path.
select Quote from sniff_csv($path)
