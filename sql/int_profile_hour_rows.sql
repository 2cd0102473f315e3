-- rows of `profile_source` arriving in each UTC hour of [$start_utc, $end_utc): sizes the roll-up's
-- windows (capplan/profile/counting.py: plan_windows), so each scan holds a bounded number of rows.
with

source as (
    select ts_utc
    from profile_source
    where ts_utc >= $start_utc::timestamp
      and ts_utc < $end_utc::timestamp
),

final as (
    select
        -- UTC timestamp -> hours since the epoch; truncated first, since integer // rounds toward zero
        -- and would put a row before 1970 in the hour after its own
        epoch_us(date_trunc('hour', ts_utc)) // 3600000000 as hour_epoch,
        count(*) as rows
    from source
    group by all
)

select hour_epoch, rows from final order by hour_epoch
