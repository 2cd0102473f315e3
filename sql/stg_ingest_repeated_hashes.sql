-- 64-bit hashes of the request ids that occur more than once in the file being ingested (view
-- `ingest_raw`): true repeats plus, rarely, two ids sharing a hash. One scan that holds 8-byte
-- hashes, not id strings, and no row numbers; usually empty, and then the exact step
-- (sql/stg_ingest_duplicate_ids.sql) is skipped. The hash table grows with the file's distinct ids;
-- it spills to disk under the ingest's DuckDB memory limit (capplan/ingest.py).
create or replace temp table ingest_repeated_hashes as
with

source as (
    select ingest_text(request_id_raw) as request_id_text from ingest_raw
),

final as (
    select hash(request_id_text) as id_hash
    from source
    where request_id_text is not null
    group by id_hash
    having count(*) > 1
)

select * from final
