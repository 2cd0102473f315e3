-- the rows a Parquet file holds, from its footer: a count known independently of the reader, which
-- the rows read must equal.
-- parameters: $path.
select sum(num_rows) from parquet_file_metadata($path)
