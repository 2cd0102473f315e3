-- the SLO's events of the hours fed by Prometheus with an error counter (metrics_ledger.errors_measured:
-- capplan.metrics), per hour, model and TTFT threshold; capplan.rollups spreads them over the hour's minutes into the
-- columns of sql/int_slo_minute_rollup.sql (resolution 1 h) and capplan.slo.status states what they rest on.
-- valid = every request the counters saw (a counter cannot tell a client's 4xx apart).
-- good = successes; with a TTFT threshold, successes x the share of the hour's TTFT observations at most the threshold,
-- read off the TTFT histogram's own buckets (metrics_ttft_buckets_hourly) and interpolated linearly inside the bucket
-- (lo_ms, le_ms] holding the threshold: exact at a bucket bound; above the last finite bound the +Inf bucket counts
-- slower. in_bucket = the successes of that bucket (what the interpolation splits; 0 at a bound). an hour without TTFT
-- buckets counts its successes good, as a logged 2xx without TTFT is (sql/ddl_macro_sli_good.sql).
-- parameters: $ttft_thresholds_ms (double[], [ms]; 'infinity' = no threshold).
with measured_hours as (
    select hour_utc
    from metrics_ledger
    group by hour_utc
    having bool_and(coalesce(errors_measured, false))
),

traffic as (
    select t.hour_utc, t.model, t.valid_events, t.success_events
    from fct_traffic_hourly as t
    inner join measured_hours using (hour_utc)
    where t.model <> '__all__' and t.valid_events > 0
),

thresholds as (
    select distinct unnest($ttft_thresholds_ms::double[]) as ttft_threshold_ms
),

buckets as (
    select
        hour_utc,
        model,
        le_ms,                                                          -- [ms]
        requests,
        coalesce(lag(le_ms) over w, 0)                  as lo_ms,       -- [ms]
        coalesce(lag(requests) over w, 0)               as below,
        max(requests) over (partition by hour_utc, model) as observed
    from metrics_ttft_buckets_hourly
    window w as (partition by hour_utc, model order by le_ms)
),

holding as (
    -- the bucket (lo_ms, le_ms] holding each finite threshold, and the share at most the threshold
    select
        b.hour_utc,
        b.model,
        t.ttft_threshold_ms,
        b.lo_ms,
        b.le_ms,
        case when t.ttft_threshold_ms < b.le_ms and isfinite(b.le_ms)
             then (b.requests - b.below) / nullif(b.observed, 0) else 0 end                        as bucket_share,
        (b.below + case when isinf(b.le_ms) then 0
                        else (b.requests - b.below) * (t.ttft_threshold_ms - b.lo_ms) / (b.le_ms - b.lo_ms) end)
            / nullif(b.observed, 0)                                                                 as share
    from buckets as b
    inner join thresholds as t
        on isfinite(t.ttft_threshold_ms) and t.ttft_threshold_ms > b.lo_ms and t.ttft_threshold_ms <= b.le_ms
),

final as (
    select
        tr.hour_utc,
        tr.model,
        th.ttft_threshold_ms,                                                                       -- [ms]
        tr.valid_events::bigint                                                                     as valid,
        (tr.valid_events - case when isinf(th.ttft_threshold_ms) then tr.success_events
                                else round(tr.success_events * coalesce(h.share, 1)) end)::bigint  as bad,
        tr.success_events::bigint                                                                   as successes,
        h.lo_ms,                                                                                    -- [ms]
        h.le_ms,                                                                                    -- [ms]
        coalesce(tr.success_events * h.bucket_share, 0)::double                                     as in_bucket
    from traffic as tr
    cross join thresholds as th
    left join holding as h
        on h.hour_utc = tr.hour_utc and h.model = tr.model and h.ttft_threshold_ms = th.ttft_threshold_ms
    order by tr.hour_utc, tr.model
)

select * from final
