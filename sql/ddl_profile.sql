-- rollup tables of the traffic profile (capplan/profile/), kept up to date by capplan.profile.refresh.refresh_rollups().
-- every row is one UTC hour of one model; model '__all__' is all models together.
create table if not exists fct_traffic_hourly (
    hour_utc             timestamp not null,  -- start of the hour, UTC
    model                varchar   not null,  -- model name, or '__all__'
    requests             bigint    not null,  -- rows that arrived in the hour [requests]
    errors               bigint    not null,  -- rows whose status is outside 2xx [requests]
    valid_events         bigint    not null,  -- rows that count for the SLI: all but 4xx other than 429 [requests]
    success_events       bigint    not null,  -- rows with a 2xx status [requests]
    input_tokens_sum     bigint    not null,  -- [tokens]
    output_tokens_sum    bigint    not null,  -- [tokens]
    ttft_ms_sum          double    not null,  -- over rows with ttft logged [ms]
    ttft_count           bigint    not null,  -- rows with ttft logged [requests]
    latency_ms_sum       double    not null,  -- over rows with latency logged [ms]
    latency_count        bigint    not null,  -- rows with latency logged [requests]
    peak_second_requests bigint    not null   -- arrivals in the busiest aligned UTC second of the hour [requests]
);
-- sparse log-binned histograms, stored one row per hour x model with each metric's non-empty bins as
-- lists (one row per bin cost DuckDB about 0.3 us per bin to store, the bulk of a rebuild): bin k holds
-- values in [gamma^k, gamma^(k+1)); bin -1 holds [0, 1). Each bin and its count are one integer, its
-- code = count * 65536 + bin + 1 (count = code >> 16, bin = (code & 65535) - 1): in `<metric>_codes`
-- (integer) when the count is below 32768, as almost all are, else in `<metric>_codes_large` (bigint);
-- each list ascending by bin. A metric with no value logged in the hour has two empty lists.
create table if not exists fct_histogram_hourly_bins (
    hour_utc                   timestamp not null,  -- start of the hour, UTC
    model                      varchar   not null,  -- model name, or '__all__'
    input_tokens_codes         integer[] not null,  -- count [requests] * 65536 + log-bin index + 1 (see above)
    input_tokens_codes_large   bigint[]  not null,  -- the same, for counts of 32768 requests or more
    output_tokens_codes        integer[] not null,
    output_tokens_codes_large  bigint[]  not null,
    ttft_ms_codes              integer[] not null,
    ttft_ms_codes_large        bigint[]  not null,
    latency_ms_codes           integer[] not null,
    latency_ms_codes_large     bigint[]  not null
);
-- what every reader reads: one row per hour x model x metric x non-empty bin (the codes decoded);
-- metric: 'input_tokens' | 'output_tokens' | 'ttft_ms' | 'latency_ms'.
create view if not exists fct_histogram_hourly as
with

codes as (
    select hour_utc, model, 'input_tokens' as metric, unnest(input_tokens_codes)::bigint as code
    from fct_histogram_hourly_bins
    union all
    select hour_utc, model, 'input_tokens', unnest(input_tokens_codes_large) from fct_histogram_hourly_bins
    union all
    select hour_utc, model, 'output_tokens', unnest(output_tokens_codes) from fct_histogram_hourly_bins
    union all
    select hour_utc, model, 'output_tokens', unnest(output_tokens_codes_large) from fct_histogram_hourly_bins
    union all
    select hour_utc, model, 'ttft_ms', unnest(ttft_ms_codes) from fct_histogram_hourly_bins
    union all
    select hour_utc, model, 'ttft_ms', unnest(ttft_ms_codes_large) from fct_histogram_hourly_bins
    union all
    select hour_utc, model, 'latency_ms', unnest(latency_ms_codes) from fct_histogram_hourly_bins
    union all
    select hour_utc, model, 'latency_ms', unnest(latency_ms_codes_large) from fct_histogram_hourly_bins
),

final as (
    select hour_utc, model, metric, ((code & 65535) - 1)::smallint as bin, (code >> 16)::bigint as count
    from codes
)

select * from final;
-- peak number of requests in flight during the hour (sweep over [arrival, arrival + latency)).
create table if not exists fct_concurrency_hourly (
    hour_utc         timestamp not null,  -- start of the hour, UTC
    model            varchar   not null,  -- model name, or '__all__'
    concurrency_peak bigint    not null   -- [requests in flight]
);
-- which hours each ingested file touched, so a refresh recomputes only those.
create table if not exists profile_file_hours (
    file_id  integer   not null,  -- requests.file_id
    hour_utc timestamp not null,  -- an hour the file's rows arrive in or are in flight during, UTC
    rows     bigint    not null   -- the file's rows arriving in that hour [requests]
);
-- the definition the stored roll-ups were computed under (capplan.profile.freshness.ROLLUP_VERSION):
-- a refresh under another definition rebuilds every roll-up from the raw rows.
create table if not exists profile_rollup_version (
    version integer not null  -- ROLLUP_VERSION of the last refresh
);
