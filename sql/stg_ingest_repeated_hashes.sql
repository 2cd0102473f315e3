-- 64-bit hashes of the request ids that occur more than once in the file being ingested (view
-- `ingest_staged`, sql/stg_ingest_staged_view.sql): true repeats plus, rarely, two ids sharing a hash. One
-- column scan that holds 8-byte hashes, not id strings, and no row numbers; usually empty, and then
-- the exact step (sql/stg_ingest_duplicate_ids.sql) stops at once. The hash table grows with the
-- file's distinct ids; it spills to disk under the ingest's DuckDB memory limit (capplan.ingest.load).
create or replace temp table ingest_repeated_hashes as
with

source as (
    select request_id from ingest_staged
),

final as (
    select hash(request_id) as id_hash
    from source
    where request_id is not null
    group by id_hash
    having count(*) > 1
)

select * from final
