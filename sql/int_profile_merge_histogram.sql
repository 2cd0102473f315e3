-- merge partition rollups of fct_histogram_hourly (registered as `profile_parts`): bin counts add up.
with

parts as (
    select * from profile_parts
),

final as (
    select hour_utc, model, metric, bin, sum(count)::bigint as count
    from parts
    group by hour_utc, model, metric, bin
)

select * from final order by model, metric, hour_utc, bin
