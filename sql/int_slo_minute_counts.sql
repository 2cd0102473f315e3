-- per-minute valid and good request counts for one SLO, on a dense UTC minute grid
-- (minutes inside the span with no requests appear with zero counts).
-- good = HTTP 2xx and, when $ttft_threshold_ms is not null, ttft_ms <= $ttft_threshold_ms;
-- a success whose TTFT was not logged counts as good (its latency cannot be judged).
-- valid = every request, except that when $count_client_errors is false, 4xx other than
-- 408 (timeout) and 429 (throttled) are not valid events: they are the caller's fault.
-- parameters: $model (null = all models), $start_utc / $end_utc (null = open), $ttft_threshold_ms [ms],
-- $count_client_errors (boolean).
with source_requests as (
    select ts_utc, status, ttft_ms
    from requests
    where ($model::varchar is null or model = $model::varchar)
      and ($start_utc::timestamp is null or ts_utc >= $start_utc::timestamp)
      and ($end_utc::timestamp is null or ts_utc < $end_utc::timestamp)
      and ($count_client_errors::boolean or not (status between 400 and 499 and status not in (408, 429)))
),

classified as (
    select
        date_trunc('minute', ts_utc) as minute_utc,
        status between 200 and 299
            and ($ttft_threshold_ms::double is null
                 or ttft_ms is null
                 or ttft_ms <= $ttft_threshold_ms::double) as is_good
    from source_requests
),

per_minute as (
    select
        minute_utc,
        count(*) as valid_count,
        count(*) filter (where is_good) as good_count
    from classified
    group by minute_utc
),

span as (
    select
        coalesce($start_utc::timestamp, min(minute_utc)) as first_minute_utc,
        coalesce($end_utc::timestamp - interval 1 minute, max(minute_utc)) as last_minute_utc
    from per_minute
),

grid as (
    select unnest(range(first_minute_utc, last_minute_utc + interval 1 minute, interval 1 minute)) as minute_utc
    from span
    where first_minute_utc is not null
),

final as (
    select
        grid.minute_utc,
        coalesce(per_minute.valid_count, 0)::bigint as valid_count,
        coalesce(per_minute.good_count, 0)::bigint as good_count
    from grid
    left join per_minute using (minute_utc)
    order by grid.minute_utc
)

select * from final
