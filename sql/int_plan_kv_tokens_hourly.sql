-- exact counts of successful (2xx) requests per UTC hour, model and input + output token total: a mergeable
-- roll-up from which any quantile of the KV tokens per sequence is exact (sql/rpt_plan_measured_inputs.sql).
-- distinct totals are bounded by the context length, so this stays small however many rows an hour has.
with source_requests as (
    select ts_utc, model, input_tokens, output_tokens
    from requests
    where sli_success(status)
),

final as (
    select
        date_trunc('hour', ts_utc)              as hour_utc,
        model,
        (input_tokens + output_tokens)::bigint  as kv_tokens,  -- [tokens]
        count(*)::bigint                        as requests
    from source_requests
    group by all
)

select * from final
