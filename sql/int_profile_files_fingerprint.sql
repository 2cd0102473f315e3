-- the rows of `requests` of file ids up to $last_file_id and their fingerprint, the sum over rows of
-- hash(file_id) (hugeint: exact): equal to sql/int_profile_recorded_files.sql when those files are as
-- the roll-ups last saw them. Two sums, not a count per file: one pass over the compressed file_id column
-- with no grouping (a few ms at 10 M rows) where a group by hashes every row.
with

source as (
    select file_id
    from requests
    where file_id <= $last_file_id
),

final as (
    select count(*)::bigint as rows, sum(hash(file_id)) as file_hash_sum  -- [requests]
    from source
)

select rows, file_hash_sum from final
