-- file ids whose rows in `requests` differ in number from what the rollups last saw
-- (new files, and files replaced or deleted since): the hours they touch must be recomputed.
with

current_files as (
    select file_id, count(*) as rows from requests group by file_id
),

rolled_up_files as (
    select file_id, sum(rows) as rows from profile_file_hours group by file_id
),

final as (
    select coalesce(c.file_id, r.file_id) as file_id
    from current_files as c
    full outer join rolled_up_files as r on c.file_id = r.file_id
    where c.rows is distinct from r.rows
)

select file_id from final order by file_id
