-- rows loaded from the current file versions (status 'loaded'), for the coverage of defaulted columns.
select coalesce(sum(rows_loaded), 0)::bigint as rows_loaded from ingest_ledger where status = 'loaded'
