-- request ids that occur more than once in the file being ingested (view `ingest_staged`), with
-- the data row of their first occurrence, whatever that row's own fate; groups the id text of only
-- the rows whose hash sql/stg_ingest_repeated_hashes.sql found repeated (the exact step).
create or replace temp table ingest_duplicate_ids as
with

source as (
    select source_row, request_id from ingest_staged
),

repeated_hashes as (
    select id_hash from ingest_repeated_hashes
),

ids as (
    select source_row, request_id
    from source
    where request_id is not null and hash(request_id) in (select id_hash from repeated_hashes)
),

final as (
    select request_id, min(source_row) as first_row
    from ids
    group by request_id
    having count(*) > 1
)

select * from final
