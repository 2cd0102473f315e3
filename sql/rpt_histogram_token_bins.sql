-- the stored token histograms (fct_histogram_hourly_bins: each hour x model's non-empty bins and their counts
-- as lists of codes, count * 65536 + bin + 1, sql/ddl_profile.sql) that sql/rpt_histogram_quantiles.sql reads
-- for input and output tokens over the whole window ($grain 'all'): per model, or with $models (not null) the
-- union of those log models, reported as model $model. capplan/profile/summary.py merges them per model in
-- numpy, without one row per bin.
with

final as (
    select
        case when $models::varchar[] is null then model else $model::varchar end as model,
        input_tokens_codes, input_tokens_codes_large, output_tokens_codes, output_tokens_codes_large
    from fct_histogram_hourly_bins
    where (case when $models::varchar[] is null then $model::varchar is null or model = $model::varchar
                else list_contains($models::varchar[], model) end)
      and ($since_utc::timestamp is null or hour_utc >= $since_utc::timestamp)
)

select * from final
