-- request ids that occur more than once in the file being ingested (view `ingest_raw`), with the
-- data row of their first occurrence; run only when sql/stg_ingest_repeated_hashes.sql found
-- repeated hashes, and grouping only the rows with those hashes (the exact step, by id text).
create or replace temp table ingest_duplicate_ids as
with

source as (
    select source_row, ingest_text(request_id_raw) as request_id_text from ingest_raw
),

repeated_hashes as (
    select id_hash from ingest_repeated_hashes
),

ids as (
    select source_row, request_id_text
    from source
    where request_id_text is not null and hash(request_id_text) in (select id_hash from repeated_hashes)
),

final as (
    select request_id_text, min(source_row) as first_row
    from ids
    group by request_id_text
    having count(*) > 1
)

select * from final
