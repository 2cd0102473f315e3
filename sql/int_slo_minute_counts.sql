-- per-minute valid and good request counts for one SLO, on a dense UTC minute grid
-- (minutes inside the span with no requests appear with zero counts), from the roll-up
-- `slo_minute_rollup` (sql/int_slo_minute_rollup.sql) of `requests` and of stored partitions;
-- rows of one key may repeat (partitions sharing a minute) and are summed.
-- valid = every request, except that when $count_client_errors is false, requests that are not
-- sli_valid(status) (4xx other than 408 and 429, sql/ddl_macro_sli_valid.sql) are not valid events.
-- good = sli_good(status, ttft_ms, $ttft_threshold_ms) ('infinity' = no threshold), counted by the roll-up.
-- parameters: $model (null = all models), $start_utc / $end_utc (null = open), $ttft_threshold_ms [ms],
-- $count_client_errors (boolean).
with source_rollup as (
    select minute_utc, requests, client_errors, good
    from slo_minute_rollup
    where ttft_threshold_ms = $ttft_threshold_ms::double
      and ($model::varchar is null or model = $model::varchar)
      and ($start_utc::timestamp is null or minute_utc >= $start_utc::timestamp)
      and ($end_utc::timestamp is null or minute_utc < $end_utc::timestamp)
),

per_minute as (
    select
        minute_utc,
        sum(requests - case when $count_client_errors::boolean then 0 else client_errors end) as valid_count,
        sum(good) as good_count
    from source_rollup
    group by minute_utc
    having valid_count > 0
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
