-- the rows of `profile_source` the hourly rollup reads (capplan/profile/counting.py counts them with
-- numpy): arrivals in [$start_utc - $lookback_us, $end_utc), narrowed to epoch microseconds, a
-- model index (`profile_models`: the models of the run, 0-based, registered by the caller; a join, so any
-- number of models costs the same per row), a status class, tokens and times (NaN when not logged).
-- Rows before $start_utc are only there for the in-flight sweep (requests still running when the
-- window starts); $lookback_us = 0 leaves them out.
with

source as (
    select ts_utc, model, status, input_tokens, output_tokens, ttft_ms, latency_ms
    from profile_source
    where ts_utc >= $start_utc::timestamp - to_microseconds($lookback_us)
      and ts_utc < $end_utc::timestamp
),

models as (
    select model, model_index from profile_models
),

final as (
    select
        epoch_us(ts_utc) as ts_us,  -- UTC timestamp -> microseconds since the epoch
        models.model_index,
        -- 0: success (sli_success: 2xx); 1: no SLI event (not sli_valid: a 4xx other than 408 and 429);
        -- 2: any other status, a valid and bad event (macros: sql/ddl_macro_sli_*.sql)
        case
            when sli_success(status) then 0
            when not sli_valid(status) then 1
            else 2
        end::utinyint as status_class,
        input_tokens,   -- [tokens]
        output_tokens,  -- [tokens]
        -- [ms]; not logged -> NaN, so the Arrow columns have no nulls and numpy reads them without a copy
        coalesce(ttft_ms, 'nan'::double) as ttft_ms,
        coalesce(latency_ms, 'nan'::double) as latency_ms
    from source
    join models using (model)
)

select * from final
