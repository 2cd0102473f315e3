-- rows of the file being ingested (view `ingest_staged`, sql/stg_ingest_staged_view.sql) that break only `request_id_duplicate`:
-- a good row whose id occurred at an earlier data row of the file (sql/stg_ingest_duplicate_ids.sql),
-- or is already in `requests` from another file. Their detail, and their raw values read again from
-- `ingest_raw` (the staging pass keeps raw values of bad rows only); run only when some id repeats
-- or `requests` holds ids of other files in the span (sql/stg_ingest_loaded_ids_exist.sql), so a
-- file of fresh ids is still read once.
-- Row numbers here are in scan order, like `source_row`; the detail names the first occurrence's data
-- row, shifted past the lines the CSV reader rejected as sql/stg_quarantine_renumber.sql does.
-- parameters: $file_id, $replaced_file_id (the earlier version of this path being replaced, or null),
-- $from_utc, $to_utc (the arrival span of the earlier rows compared, capplan.ingest.duplicates._loaded_id_span),
-- $gaps (per rejected data row r_j, j 1-based in file order: r_j - j; empty when none).
create or replace temp table ingest_duplicate_rows as
with

staged as (
    select source_row, request_id from ingest_staged where rule is null and request_id is not null
),

first_rows as (
    select
        request_id,
        first_row,
        first_row + (
            select count(*) from unnest(cast($gaps as bigint[])) as g(gap) where g.gap < first_row
        ) as first_data_row
    from ingest_duplicate_ids
),

loaded_ids as (
    -- ids of this file already in `requests` from other files (not the version this file replaces)
    -- that arrived between $from_utc and $to_utc (both null: any time); as constants they skip the
    -- row groups of `requests` outside that span. The semi join keeps the hash table to this file's
    -- ids, however large `requests` grows
    select distinct r.request_id
    from requests as r
    semi join staged as s on r.request_id = s.request_id
    where r.file_id <> $file_id and r.file_id is distinct from $replaced_file_id
        and ($from_utc is null or r.ts_utc between cast($from_utc as timestamp) and cast($to_utc as timestamp))
),

duplicates as (
    select
        s.source_row,
        'request_id: ' || s.request_id || ' already seen '
            || case when l.request_id is not null then 'in an earlier file'
                    else 'at data row ' || f.first_data_row end as detail
    from staged as s
    left join first_rows as f on s.request_id = f.request_id
    left join loaded_ids as l on s.request_id = l.request_id
    where f.first_row < s.source_row or l.request_id is not null
),

numbered_raw as (
    -- a CSV scan does not number its rows (sql/stg_ingest_staged_view.sql): number them here, in scan order
    select coalesce(source_row, row_number() over ()) as source_row, raw from ingest_raw
),

raw_rows as (
    select source_row, to_json(raw) as raw_json
    from numbered_raw
    where source_row in (select source_row from duplicates)
),

final as (
    select d.source_row, d.detail, r.raw_json
    from duplicates as d
    join raw_rows as r on d.source_row = r.source_row
)

select * from final
