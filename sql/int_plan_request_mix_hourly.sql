-- the request mix per UTC hour, model and tenant: a mergeable roll-up (counts, sums, min/max), so a
-- partition rolled up on its own adds up with the others (capplan/partitioned/) and the plan
-- measures the same figures from `requests` or from partitions (sql/rpt_plan_measured_inputs.sql).
-- token and latency sums are over successful requests (2xx) only: the work the fleet is sized for.
with source_requests as (
    select ts_utc, model, tenant, status, input_tokens, output_tokens, latency_ms
    from requests
),

final as (
    select
        date_trunc('hour', ts_utc)                                         as hour_utc,
        model,
        tenant,
        min(ts_utc)                                                        as first_ts_utc,
        max(ts_utc)                                                        as last_ts_utc,
        count(*)::bigint                                                   as requests,
        count(*) filter (where sli_success(status))::bigint         as successes,
        coalesce(sum(input_tokens) filter (where sli_success(status)), 0)::bigint
                                                                           as input_tokens_sum,   -- [tokens]
        coalesce(sum(output_tokens) filter (where sli_success(status)), 0)::bigint
                                                                           as output_tokens_sum,  -- [tokens]
        count(latency_ms) filter (where sli_success(status))::bigint
                                                                           as latency_count,
        coalesce(sum(latency_ms) filter (where sli_success(status)), 0)::double
                                                                           as latency_ms_sum      -- [ms]
    from source_requests
    group by all
)

select * from final
