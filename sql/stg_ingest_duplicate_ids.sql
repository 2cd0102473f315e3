-- request ids that occur more than once in the file being ingested (view `ingest_raw`), with
-- the data row of their first occurrence; computed once per file, before the staging passes.
create or replace temp table ingest_duplicate_ids as
with

source as (
    select source_row, nullif(trim(request_id_raw), '') as request_id_text from ingest_raw
),

final as (
    select request_id_text, min(source_row) as first_row
    from source
    where request_id_text is not null
    group by request_id_text
    having count(*) > 1
)

select * from final
