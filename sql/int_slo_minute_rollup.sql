-- per UTC minute, model and TTFT threshold: the counts every SLO's events are made of, a mergeable
-- roll-up (sums) so that a partition rolled up on its own adds up with the others
-- (capplan/partitioned.py) and the SLO stage reads the same counts from `requests` or from partitions.
-- good = HTTP 2xx and ttft_ms <= the threshold; a success whose TTFT was not logged counts as good
-- (its latency cannot be judged). 'infinity' stands for "no TTFT threshold" (good = 2xx).
-- client_errors = 4xx other than 408 (timeout) and 429 (throttled): the caller's fault, invalid events
-- unless an SLO counts them (sql/int_slo_minute_counts.sql).
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
        count(*) filter (where r.status between 400 and 499
                           and r.status not in (408, 429))::bigint                  as client_errors,
        count(*) filter (where r.status between 200 and 299
                           and (r.ttft_ms is null or r.ttft_ms <= t.ttft_threshold_ms))::bigint
                                                                                    as good
    from source_requests as r, thresholds as t
    group by all
)

select * from final
