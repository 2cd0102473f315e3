-- the export window of a pool's log models ($models): the $days x 24 whole UTC hours ending with the hour of
-- their newest request. since_utc is hour-aligned, so the profile's hourly roll-ups cover the same rows.
with pool_rows as (
    select ts_utc from requests where list_contains($models::varchar[], model)
),

final as (
    select
        date_trunc('hour', max(ts_utc)) + interval 1 hour - to_days($days::integer) as since_utc,  -- UTC
        date_trunc('hour', max(ts_utc)) + interval 1 hour                           as until_utc,  -- UTC, exclusive
        count(*)                                                                    as requests
    from pool_rows
)

select * from final
