-- the arrivals of one model ($model) in [$since_utc, $until_utc), in arrival order, for the exported
-- trace: milliseconds since the window's first arrival, and the request's token lengths. every row
-- counts (any status): the trace replays what arrived.
with model_rows as (
    select ts_utc, input_tokens, output_tokens
    from requests
    where model = $model::varchar
      and ts_utc >= $since_utc::timestamp
      and ts_utc < $until_utc::timestamp
),

final as (
    select
        -- UTC timestamp -> microseconds since the first arrival
        epoch_us(ts_utc) - min(epoch_us(ts_utc)) over () as offset_us,
        input_tokens,   -- [tokens]
        output_tokens   -- [tokens]
    from model_rows
    order by ts_utc
)

select * from final
