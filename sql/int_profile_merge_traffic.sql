-- merge partition rollups of fct_traffic_hourly (registered as `profile_parts`): counts and sums
-- add up; the busiest second is a max, exact when each UTC hour lies wholly in one partition.
with

parts as (
    select * from profile_parts
),

final as (
    select
        hour_utc,
        model,
        sum(requests)::bigint as requests,
        sum(errors)::bigint as errors,
        sum(valid_events)::bigint as valid_events,
        sum(success_events)::bigint as success_events,
        sum(input_tokens_sum)::bigint as input_tokens_sum,
        sum(output_tokens_sum)::bigint as output_tokens_sum,
        sum(ttft_ms_sum) as ttft_ms_sum,
        sum(ttft_count)::bigint as ttft_count,
        sum(latency_ms_sum) as latency_ms_sum,
        sum(latency_count)::bigint as latency_count,
        max(peak_second_requests)::bigint as peak_second_requests
    from parts
    group by hour_utc, model
)

select * from final order by model, hour_utc
