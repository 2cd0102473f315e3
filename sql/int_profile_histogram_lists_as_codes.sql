-- the rows of an old `fct_histogram_hourly_bins` of two lists per metric (bins, counts), renamed
-- `profile_histogram_lists` (sql/ddl_profile_migrate_histogram_lists.sql), as rows of the current one: each
-- (bin, count) pair as its code count * 65536 + bin + 1 (sql/ddl_profile.sql), row by row (no regrouping),
-- in the lists' order (ascending by bin). p[1]: the bin, p[2]: its count [requests].
with

final as (
    select
        hour_utc,
        model,
        [p[2] * 65536 + p[1] + 1 for p in list_zip(input_tokens_bins, input_tokens_counts) if p[2] < 32768]::integer[]
            as input_tokens_codes,
        [p[2] * 65536 + p[1] + 1 for p in list_zip(input_tokens_bins, input_tokens_counts) if p[2] >= 32768]::bigint[]
            as input_tokens_codes_large,
        [p[2] * 65536 + p[1] + 1 for p in list_zip(output_tokens_bins, output_tokens_counts) if p[2] < 32768]::integer[]
            as output_tokens_codes,
        [p[2] * 65536 + p[1] + 1 for p in list_zip(output_tokens_bins, output_tokens_counts) if p[2] >= 32768]::bigint[]
            as output_tokens_codes_large,
        [p[2] * 65536 + p[1] + 1 for p in list_zip(ttft_ms_bins, ttft_ms_counts) if p[2] < 32768]::integer[]
            as ttft_ms_codes,
        [p[2] * 65536 + p[1] + 1 for p in list_zip(ttft_ms_bins, ttft_ms_counts) if p[2] >= 32768]::bigint[]
            as ttft_ms_codes_large,
        [p[2] * 65536 + p[1] + 1 for p in list_zip(latency_ms_bins, latency_ms_counts) if p[2] < 32768]::integer[]
            as latency_ms_codes,
        [p[2] * 65536 + p[1] + 1 for p in list_zip(latency_ms_bins, latency_ms_counts) if p[2] >= 32768]::bigint[]
            as latency_ms_codes_large
    from profile_histogram_lists
)

select * from final
