-- what the roll-ups last saw of the ingested files (`profile_file_hours`, sql/int_profile_file_hours.sql):
-- the highest file id, the rows of all files, and their fingerprint, the sum over rows of hash(file_id)
-- (each file's rows times the hash of its id; hugeint: exact). Nulls when no file was seen.
-- capplan/profile/freshness.py (changed_file_ids) compares them with sql/int_profile_files_fingerprint.sql.
with

files as (
    select file_id, sum(rows) as rows  -- [requests]
    from profile_file_hours
    group by file_id
),

final as (
    select
        max(file_id) as last_file_id,
        sum(rows)::bigint as rows,  -- [requests]
        sum(rows::hugeint * hash(file_id)) as file_hash_sum
    from files
)

select last_file_id, rows, file_hash_sum from final
