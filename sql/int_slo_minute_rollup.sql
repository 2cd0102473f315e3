-- per UTC minute, model and TTFT threshold: the counts every SLO's events are made of, a mergeable
-- roll-up (sums) so that a partition rolled up on its own adds up with the others
-- (capplan/partitioned/) and the SLO stage reads the same counts from `requests` or from partitions.
-- good = sli_good(status, ttft_ms, threshold) (sql/ddl_macro_sli_good.sql: 2xx and ttft_ms <= the
-- threshold, or TTFT not logged). 'infinity' stands for "no TTFT threshold" (good = 2xx).
-- client_errors = requests that are not sli_valid(status) (sql/ddl_macro_sli_valid.sql: 4xx other than
-- 408 and 429): the caller's fault, invalid events unless an SLO counts them (sql/int_slo_minute_counts.sql).
-- parameters: $ttft_thresholds_ms (double[], [ms]); $model (null = all models); $start_utc / $end_utc
-- (null = open).
with source_requests as (
    select ts_utc, model, status, ttft_ms
    from requests
    where ($model::varchar is null or model = $model::varchar)
      and ($start_utc::timestamp is null or ts_utc >= $start_utc::timestamp)
      and ($end_utc::timestamp is null or ts_utc < $end_utc::timestamp)
),

thresholds as (
    select distinct unnest($ttft_thresholds_ms::double[]) as ttft_threshold_ms
),

final as (
    select
        date_trunc('minute', r.ts_utc)                                              as minute_utc,
        r.model,
        t.ttft_threshold_ms,
        count(*)::bigint                                                            as requests,
        count(*) filter (where not sli_valid(r.status))::bigint                     as client_errors,
        count(*) filter (where sli_good(r.status, r.ttft_ms, t.ttft_threshold_ms))::bigint as good
    from source_requests as r, thresholds as t
    group by all
)

select * from final
