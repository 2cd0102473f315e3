-- rows of fct_histogram_hourly (one per bin, registered as `profile_histogram_rows`: a partition merge
-- or a metrics chunk) packed as rows of fct_histogram_hourly_bins: one per hour x model x metric,
-- its bins ascending (a bin given twice is summed).
with

merged as (
    select hour_utc, model, metric, bin, sum(count)::bigint as count
    from profile_histogram_rows
    group by all
),

final as (
    select hour_utc, model, metric, list(bin order by bin) as bins, list(count order by bin) as counts
    from merged
    group by all
)

select * from final
