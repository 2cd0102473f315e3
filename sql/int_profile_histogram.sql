-- sparse log-binned histograms per UTC hour, model (and '__all__') and metric, of the rows of
-- `profile_source` that arrive in [$start_utc, $end_utc). Bin k = floor(ln(x) / ln(gamma)) holds
-- [gamma^k, gamma^(k+1)); values below 1 (zero tokens, sub-millisecond times) go to bin -1.
-- $inv_ln_gamma = 1 / ln(gamma). Mergeable: bin counts add up over partitions.
with

source as (
    select
        epoch_us(ts_utc) // 3600000000 as hour_epoch,
        model, input_tokens, output_tokens, ttft_ms, latency_ms
    from profile_source
    where ts_utc >= $start_utc::timestamp and ts_utc < $end_utc::timestamp
),

per_model as (
    -- one aggregate per metric: measured faster than unnesting the four metrics into one
    select hour_epoch, model, 'input_tokens' as metric,
        greatest(floor(ln(greatest(input_tokens, 0.5)) * $inv_ln_gamma), -1)::smallint as bin, count(*) as count
    from source group by all
    union all
    select hour_epoch, model, 'output_tokens' as metric,
        greatest(floor(ln(greatest(output_tokens, 0.5)) * $inv_ln_gamma), -1)::smallint as bin, count(*) as count
    from source group by all
    union all
    select hour_epoch, model, 'ttft_ms' as metric,
        greatest(floor(ln(greatest(ttft_ms, 0.5)) * $inv_ln_gamma), -1)::smallint as bin, count(*) as count
    from source where ttft_ms is not null group by all
    union all
    select hour_epoch, model, 'latency_ms' as metric,
        greatest(floor(ln(greatest(latency_ms, 0.5)) * $inv_ln_gamma), -1)::smallint as bin, count(*) as count
    from source where latency_ms is not null group by all
),

all_models as (
    -- '__all__' is the sum of the model histograms: no second pass over the rows
    select hour_epoch, '__all__' as model, metric, bin, sum(count)::bigint as count
    from per_model
    group by all
),

final as (
    select make_timestamp(hour_epoch * 3600000000) as hour_utc, model, metric, bin, count
    from (select * from per_model union all select * from all_models)
)

select * from final
