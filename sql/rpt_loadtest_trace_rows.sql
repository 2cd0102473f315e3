-- the arrivals of a pool's log models ($models) in [$since_utc, $until_utc), in arrival order, for the
-- exported trace: milliseconds since the window's first arrival, and the request's token lengths. every row
-- of every listed model counts (any status): the trace replays what arrived at the pool.
with pool_rows as (
    select ts_utc, model, input_tokens, output_tokens
    from requests
    where list_contains($models::varchar[], model)
      and ts_utc >= $since_utc::timestamp
      and ts_utc < $until_utc::timestamp
),

final as (
    select
        -- UTC timestamp -> microseconds since the first arrival
        epoch_us(ts_utc) - min(epoch_us(ts_utc)) over () as offset_us,
        input_tokens,   -- [tokens]
        output_tokens   -- [tokens]
    from pool_rows
    order by ts_utc, model
)

select * from final
