-- the bins of an old `fct_histogram_hourly_bins` of two lists per metric, renamed `profile_histogram_lists`
-- (sql/ddl_profile_migrate_histogram_lists.sql), one row per bin: the rows its view showed, which
-- capplan.profile.refresh.store_histogram_rows packs again as codes.
with

final as (
    select hour_utc, model, 'input_tokens' as metric, unnest(input_tokens_bins) as bin,
           unnest(input_tokens_counts) as count
    from profile_histogram_lists
    union all
    select hour_utc, model, 'output_tokens', unnest(output_tokens_bins), unnest(output_tokens_counts)
    from profile_histogram_lists
    union all
    select hour_utc, model, 'ttft_ms', unnest(ttft_ms_bins), unnest(ttft_ms_counts)
    from profile_histogram_lists
    union all
    select hour_utc, model, 'latency_ms', unnest(latency_ms_bins), unnest(latency_ms_counts)
    from profile_histogram_lists
)

select * from final
