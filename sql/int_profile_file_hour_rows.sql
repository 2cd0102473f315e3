-- rows arriving in each UTC hour of [$start_utc, $end_utc), as the refresh has just recorded them per
-- file in `profile_file_hours` (current for every file of `requests` once it is updated): the counts of
-- sql/int_profile_hour_rows.sql over `requests`, read from a few rows per file instead of a scan of
-- every row. They only size the refresh's windows (capplan/profile/counting.py: plan_windows): a
-- count that differed would move a window's cut, never a figure of the roll-ups.
with

source as (
    select hour_utc, rows
    from profile_file_hours
    where hour_utc >= $start_utc::timestamp
      and hour_utc < $end_utc::timestamp
),

final as (
    select
        epoch_us(hour_utc) // 3600000000 as hour_epoch,  -- hour_utc is a whole hour: the division is exact
        sum(rows)::bigint as rows
    from source
    group by all
)

select hour_epoch, rows from final where rows > 0 order by hour_epoch
