-- rows of fct_histogram_hourly (one per bin, registered as `profile_histogram_rows`: a partition merge,
-- a metrics chunk or an old table being migrated) packed as rows of fct_histogram_hourly_bins: one per
-- hour x model, each bin and its count one code (count * 65536 + bin + 1, sql/ddl_profile.sql), a
-- count below 32768 in `<metric>_codes`, a larger one in `<metric>_codes_large`, each list ascending by
-- bin (a bin given twice is summed; a metric absent: empty lists).
with

merged as (
    select hour_utc, model, metric, bin, sum(count)::bigint as count
    from profile_histogram_rows
    group by all
),

coded as (
    select hour_utc, model, metric, bin, count * 65536 + bin + 1 as code, count < 32768 as small
    from merged
),

final as (
    select
        hour_utc,
        model,
        coalesce(list(code order by bin) filter (where metric = 'input_tokens' and small), [])::integer[]
            as input_tokens_codes,
        coalesce(list(code order by bin) filter (where metric = 'input_tokens' and not small), [])::bigint[]
            as input_tokens_codes_large,
        coalesce(list(code order by bin) filter (where metric = 'output_tokens' and small), [])::integer[]
            as output_tokens_codes,
        coalesce(list(code order by bin) filter (where metric = 'output_tokens' and not small), [])::bigint[]
            as output_tokens_codes_large,
        coalesce(list(code order by bin) filter (where metric = 'ttft_ms' and small), [])::integer[]
            as ttft_ms_codes,
        coalesce(list(code order by bin) filter (where metric = 'ttft_ms' and not small), [])::bigint[]
            as ttft_ms_codes_large,
        coalesce(list(code order by bin) filter (where metric = 'latency_ms' and small), [])::integer[]
            as latency_ms_codes,
        coalesce(list(code order by bin) filter (where metric = 'latency_ms' and not small), [])::bigint[]
            as latency_ms_codes_large
    from coded
    group by hour_utc, model
)

select * from final
