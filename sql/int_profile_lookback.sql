-- how far before $start_utc (a whole hour) a refresh must read rows for its in-flight sweep: the longest
-- latency [ms] of the files whose requests arrive before $start_utc and are still in flight at it.
-- `profile_file_hours` (sql/int_profile_file_hours.sql, current for every file when the refresh
-- recomputes) holds the hours each file's requests arrive in and the later hours they are in flight, so
-- such a file has a row at $start_utc and one before it. Only those files' rows are read (a day or so),
-- not every row's latency; 0 when none is in flight (a rebuild from the first hour).
with

in_flight_files as (
    select file_id
    from profile_file_hours
    group by file_id
    having bool_or(hour_utc = $start_utc::timestamp) and min(hour_utc) < $start_utc::timestamp
),

final as (
    select coalesce(max(latency_ms), 0) as longest_latency_ms  -- [ms]
    from requests
    where file_id in (select file_id from in_flight_files)
)

select longest_latency_ms from final
