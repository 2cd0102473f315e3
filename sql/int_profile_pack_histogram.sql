-- rows of fct_histogram_hourly (one per bin, registered as `profile_histogram_rows`: a partition merge,
-- a metrics chunk or an old table being migrated) packed as rows of fct_histogram_hourly_bins: one per
-- hour x model, each metric's bins ascending (a bin given twice is summed; a metric absent: empty lists).
with

merged as (
    select hour_utc, model, metric, bin, sum(count)::bigint as count
    from profile_histogram_rows
    group by all
),

final as (
    select
        hour_utc,
        model,
        coalesce(list(bin order by bin) filter (where metric = 'input_tokens'), [])::smallint[] as input_tokens_bins,
        coalesce(list(count order by bin) filter (where metric = 'input_tokens'), [])::bigint[] as input_tokens_counts,
        coalesce(list(bin order by bin) filter (where metric = 'output_tokens'), [])::smallint[] as output_tokens_bins,
        coalesce(list(count order by bin) filter (where metric = 'output_tokens'), [])::bigint[] as output_tokens_counts,
        coalesce(list(bin order by bin) filter (where metric = 'ttft_ms'), [])::smallint[] as ttft_ms_bins,
        coalesce(list(count order by bin) filter (where metric = 'ttft_ms'), [])::bigint[] as ttft_ms_counts,
        coalesce(list(bin order by bin) filter (where metric = 'latency_ms'), [])::smallint[] as latency_ms_bins,
        coalesce(list(count order by bin) filter (where metric = 'latency_ms'), [])::bigint[] as latency_ms_counts
    from merged
    group by hour_utc, model
)

select * from final
