-- the request-mix figures the monthly plan measures from the logs, over the most recent
-- $window_days days of data (ending at the newest request), all models together.
-- successful requests only (2xx): failed ones are not the work the fleet is sized for.
-- output: one row; token figures [tokens/request], latency [s], kv quantile [tokens].
with source_requests as (
    select ts_utc, input_tokens, output_tokens, status, latency_ms
    from requests
),

span as (
    select max(ts_utc) as last_ts_utc, min(ts_utc) as first_ts_utc
    from source_requests
),

recent as (
    select r.*
    from source_requests as r, span as s
    where r.ts_utc > s.last_ts_utc - to_days($window_days::integer)
      and r.status between 200 and 299
),

final as (
    select
        (select first_ts_utc from span)                          as first_ts_utc,
        (select last_ts_utc from span)                           as last_ts_utc,
        count(*)                                                 as requests,
        avg(input_tokens)::double                                as input_tokens_per_request,
        avg(output_tokens)::double                               as output_tokens_per_request,
        -- ms -> s
        avg(latency_ms)::double / 1000.0                         as latency_s,
        count(latency_ms)                                        as requests_with_latency,
        quantile_cont(input_tokens + output_tokens, $kv_quantile::double)::double
                                                                 as kv_tokens_per_sequence
    from recent
)

select * from final
