-- the export window of one model ($model): the $days x 24 whole UTC hours ending with the hour of its
-- newest request. since_utc is hour-aligned, so the profile's hourly roll-ups cover the same rows.
with model_rows as (
    select ts_utc from requests where model = $model::varchar
),

final as (
    select
        date_trunc('hour', max(ts_utc)) + interval 1 hour - to_days($days::integer) as since_utc,  -- UTC
        date_trunc('hour', max(ts_utc)) + interval 1 hour                           as until_utc,  -- UTC, exclusive
        count(*)                                                                    as requests
    from model_rows
)

select * from final
