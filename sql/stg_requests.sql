-- parse and check one request-log file: parse the columns of the temp view `ingest_raw` and name
-- the FIRST rule each row breaks (`rule` is null for a good row); detail and raw values of bad rows
-- only. Every rule but `request_id_duplicate` is named here; that one needs every id of the file
-- and is marked afterwards (sql/stg_ingest_duplicate_rows.sql, sql/stg_ingest_insert_duplicates.sql).
-- capplan.ingest.stage registers this query as the temp view `ingest_checked`; sql/stg_ingest_insert_rows.sql
-- writes its result, every row, to `request_rows`, so the file is read once.
-- `ingest_raw` columns (built by capplan.ingest.readers from the reader's column types):
--   source_row (1-based data row of the file), raw (the row as read), raw_error (a rule the reader
--   already knows is broken, e.g. json_malformed, csv_wrong_column_count; else null), raw_detail (its
--   detail, when the reader words it);
--   the timestamp in exactly one of four forms, the other three null:
--     ts_utc_raw (VARCHAR text), ts_utc_instant (TIMESTAMP, UTC: a typed zone-aware column),
--     ts_utc_wall (TIMESTAMP, naive wall time in $timezone: a typed naive column),
--     ts_utc_number (DOUBLE: a typed numeric column, epoch or offset from $origin_utc);
--   input_tokens_raw, output_tokens_raw, status_raw, ttft_ms_raw, latency_ms_raw: VARCHAR, or the
--     source's numeric type when the reader already typed the column (Parquet; the typed fast path);
--   model_raw, request_id_raw, tenant_raw, zone_raw: VARCHAR.
-- Text columns go through the macro ingest_text (sql/stg_ingest_macro_text.sql), zone-aware
-- instants through ingest_utc (sql/stg_ingest_macro_utc.sql).
-- Numeric text is parsed by try_cast, which skips surrounding whitespace; trim and the
-- missing-or-unparseable distinctions run only on rows whose value did not parse (DuckDB evaluates a
-- CASE branch and the right side of `and` only on the rows that reach them), so a typed column costs
-- a cheap numeric cast, and a clean text column one try_cast.
-- parameters: $now_utc (ingest time, UTC), $future_tolerance_s [s],
-- $context_limit_tokens [tokens], $timezone (IANA zone of naive timestamps),
-- $unit_us (microseconds per numeric timestamp unit; null when none is configured),
-- $origin_utc (start of relative timestamps, UTC; null for epoch), $default_model (the model of rows that
-- have none: the source's `model`, else 'default'), $max_duration_ms (the longest plausible TTFT or
-- latency [ms]; capplan.ingest.columns.MAX_DURATION_MS).
with

source as (
    select * from ingest_raw
),

numbers as (
    select
        source_row,
        raw,
        raw_error,
        raw_detail,
        ts_utc_raw,
        ts_utc_instant,
        ts_utc_wall,
        coalesce(ts_utc_number, case when $unit_us is not null then try_cast(ts_utc_raw as double) end) as ts_number,
        input_tokens_raw,
        output_tokens_raw,
        status_raw,
        ttft_ms_raw,
        latency_ms_raw,
        try_cast(input_tokens_raw as double) as input_tokens_number,
        try_cast(output_tokens_raw as double) as output_tokens_number,
        try_cast(status_raw as double) as status_number,
        try_cast(ttft_ms_raw as double) as ttft_ms_number,
        try_cast(latency_ms_raw as double) as latency_ms_number,
        ingest_text(model_raw) as model_text,
        -- a row the reader already knows is malformed has no trustworthy id: it is no id's first occurrence
        case when raw_error is null then ingest_text(request_id_raw) end as request_id_text,
        ingest_text(tenant_raw) as tenant_text,
        ingest_text(zone_raw) as zone_text
    from source
),

parsed as (
    select
        *,
        case
            when ts_utc_instant is not null then ts_utc_instant
            -- naive wall time in $timezone, converted to UTC
            when ts_utc_wall is not null then
                case when $timezone = 'UTC' then ts_utc_wall else ingest_utc(timezone($timezone, ts_utc_wall)) end
            -- numeric: epoch, or offset from $origin_utc, in units of $unit_us microseconds
            when ts_number is not null then try(
                coalesce(cast($origin_utc as timestamp), timestamp '1970-01-01')
                + to_microseconds(try_cast(round(ts_number * $unit_us) as bigint)))
            -- text naming its own zone (an offset Z, +hh, +hhmm, +hh:mm right after a time of day), or
            -- naive text when $timezone is UTC: the session TimeZone is UTC, so timestamptz -> timestamp
            -- yields UTC wall time
            when $timezone = 'UTC'
                or regexp_matches(trim(ts_utc_raw), '\d:\d\d(:\d\d(\.\d*)?)?\s*([zZ]|[+-]\d\d(:?\d\d)?)$')
                then ingest_utc(try_cast(ts_utc_raw as timestamptz))
            -- naive text: wall time in $timezone, converted to UTC
            else ingest_utc(timezone($timezone, try_cast(trim(ts_utc_raw) as timestamp)))
        end as ts_utc,
        case
            when status_number is not null then
                case when status_number between 100 and 599 and status_number = floor(status_number)
                    then cast(status_number as smallint) end
            when lower(trim(cast(status_raw as varchar))) in ('success', 'succeeded', 'ok', 'true') then 200
            when lower(trim(cast(status_raw as varchar))) in ('failure', 'failed', 'fail', 'error', 'false')
                then 500
        end as status_code
    from numbers
),

checked as (
    select
        p.*,
        case
            when p.raw_error is not null then p.raw_error
            when p.ts_utc is null then
                case when p.ts_number is null and nullif(trim(p.ts_utc_raw), '') is null
                    and p.ts_utc_wall is null then 'timestamp_missing' else 'timestamp_unparseable' end
            -- +/-infinity is no arrival time (text gives null through ingest_utc; typed columns get here)
            when not isfinite(p.ts_utc) then 'timestamp_unparseable'
            -- DuckDB's special word `epoch` (any case, spaces) parses as 1970-01-01 00:00 (in the source's
            -- zone): a text without a digit is no timestamp (`now`, `today`, `allballs` already fail to
            -- parse). The regex runs only on rows within a day of 1970-01-01.
            when p.ts_utc between timestamp '1969-12-31 00:00:00' and timestamp '1970-01-02 00:00:00'
                and p.ts_utc_raw is not null and not regexp_matches(p.ts_utc_raw, '[0-9]')
                then 'timestamp_unparseable'
            -- outside what pandas' datetime64[ns] holds (1677-09-21 to 2262-04-11), as the profile reads it
            when p.ts_utc < timestamp '1677-09-21 00:12:43.145225' or p.ts_utc > timestamp '2262-04-11 23:47:16.854775'
                then 'timestamp_out_of_range'
            when p.ts_utc > cast($now_utc as timestamp) + to_microseconds(cast($future_tolerance_s * 1e6 as bigint))
                then 'timestamp_future'
            when p.input_tokens_number is null or p.output_tokens_number is null then
                case when nullif(trim(cast(p.input_tokens_raw as varchar)), '') is null
                    or nullif(trim(cast(p.output_tokens_raw as varchar)), '') is null
                    then 'tokens_missing' else 'tokens_not_integer' end
            -- nan, inf (also `1e400` text, which parses as inf) are no integers
            when not isfinite(p.input_tokens_number) or not isfinite(p.output_tokens_number)
                or p.input_tokens_number <> floor(p.input_tokens_number)
                or p.output_tokens_number <> floor(p.output_tokens_number) then 'tokens_not_integer'
            when p.input_tokens_number < 0 or p.output_tokens_number < 0 then 'tokens_negative'
            when p.input_tokens_number + p.output_tokens_number > $context_limit_tokens
                then 'tokens_above_context_limit'
            -- the columns are INTEGER: reached only when context_limit_tokens is set above 2^31 - 1
            when p.input_tokens_number > 2147483647 or p.output_tokens_number > 2147483647 then 'tokens_out_of_range'
            when p.status_code is null then 'status_unknown'
            -- nan and inf are no durations: the profile's arithmetic cannot hold them; nor is a finite value
            -- beyond $max_duration_ms (1e300 would overflow the in-flight sweep's microseconds)
            when not isfinite(p.ttft_ms_number) or p.ttft_ms_number < 0 or p.ttft_ms_number > $max_duration_ms
                or (p.ttft_ms_number is null and nullif(trim(cast(p.ttft_ms_raw as varchar)), '') is not null)
                then 'ttft_ms_invalid'
            -- nan and inf are no durations: the profile's arithmetic cannot hold them
            when not isfinite(p.latency_ms_number) or p.latency_ms_number < 0 or p.latency_ms_number > $max_duration_ms
                or (p.latency_ms_number is null and nullif(trim(cast(p.latency_ms_raw as varchar)), '') is not null)
                then 'latency_ms_invalid'
        end as rule
    from parsed as p
),

final as (
    select
        ts_utc,
        -- typed for good rows only: a bad row's number may not fit an integer
        case when rule is null then cast(input_tokens_number as integer) end as input_tokens,
        case when rule is null then cast(output_tokens_number as integer) end as output_tokens,
        coalesce(model_text, $default_model) as model,
        status_code as status,
        ttft_ms_number as ttft_ms,
        latency_ms_number as latency_ms,
        request_id_text as request_id,
        tenant_text as tenant,
        zone_text as zone,
        source_row,
        rule,
        -- only bad rows reach the inner CASE (a CASE over every row compared `rule` with each name)
        case when rule is not null then
            case rule
                when 'json_malformed' then 'line is not a JSON object; expected one JSON object per line'
                when 'csv_wrong_column_count' then raw_detail
                when 'csv_unbalanced_quote' then raw_detail
                when 'timestamp_missing' then 'ts_utc: no value; expected a timestamp'
                when 'timestamp_unparseable' then 'ts_utc: '
                    || coalesce(trim(ts_utc_raw), cast(ts_number as varchar), cast(ts_utc_wall as varchar),
                        cast(ts_utc as varchar))
                    || ' is not ISO-8601, or is numeric without a timestamp unit; expected a timestamp'
                when 'timestamp_future' then 'ts_utc: ' || cast(ts_utc as varchar) || ' UTC is after the ingest time '
                    || cast(cast($now_utc as timestamp) as varchar) || ' UTC plus ' || $future_tolerance_s || ' s'
                when 'tokens_missing' then 'input_tokens/output_tokens: no value; expected an integer >= 0'
                when 'tokens_not_integer' then 'input_tokens=' || coalesce(trim(cast(input_tokens_raw as varchar)), '')
                    || ', output_tokens=' || coalesce(trim(cast(output_tokens_raw as varchar)), '') || ': expected integers'
                when 'tokens_negative' then 'input_tokens=' || trim(cast(input_tokens_raw as varchar))
                    || ', output_tokens=' || trim(cast(output_tokens_raw as varchar)) || ': expected >= 0'
                when 'tokens_above_context_limit' then 'input_tokens+output_tokens='
                    -- a sum beyond bigint (>= 2^63, or 1e300) is printed as the double it is
                    || case when input_tokens_number + output_tokens_number < 1e18
                        then cast(cast(input_tokens_number + output_tokens_number as bigint) as varchar)
                        else cast(input_tokens_number + output_tokens_number as varchar) end
                    || ' exceeds the context limit of ' || $context_limit_tokens || ' tokens'
                when 'timestamp_out_of_range' then 'ts_utc: ' || cast(ts_utc as varchar)
                    || ' UTC is outside 1677-09-21..2262-04-11; expected a timestamp in that range'
                when 'tokens_out_of_range' then 'input_tokens=' || trim(cast(input_tokens_raw as varchar))
                    || ', output_tokens=' || trim(cast(output_tokens_raw as varchar))
                    || ': expected at most 2147483647 each'
                when 'status_unknown' then 'status: '
                    || coalesce(lower(nullif(trim(cast(status_raw as varchar)), '')), 'no value')
                    || ' is not an HTTP code 100-599 or a success/failure word'
                when 'ttft_ms_invalid' then 'ttft_ms: ' || trim(cast(ttft_ms_raw as varchar))
                    || ' is not a finite number from 0 to ' || $max_duration_ms || ' ms (one day)'
                when 'latency_ms_invalid' then 'latency_ms: ' || trim(cast(latency_ms_raw as varchar))
                    || ' is not a finite number from 0 to ' || $max_duration_ms || ' ms (one day)'
            end
        end as detail,
        case when rule is not null then to_json(raw) end as raw_json
    from checked
)

select * from final
