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
-- two lists (one row per bin cost DuckDB about 0.3 us per bin to store, the bulk of a rebuild):
-- bin k holds values in [gamma^k, gamma^(k+1)); bin -1 holds [0, 1). A metric with no value logged in
-- the hour has two empty lists.
create table if not exists fct_histogram_hourly_bins (
    hour_utc             timestamp  not null,  -- start of the hour, UTC
    model                varchar    not null,  -- model name, or '__all__'
    input_tokens_bins    smallint[] not null,  -- the non-empty log-bin indices (see above), ascending
    input_tokens_counts  bigint[]   not null,  -- rows whose value falls in each bin of the list before [requests]
    output_tokens_bins   smallint[] not null,
    output_tokens_counts bigint[]   not null,
    ttft_ms_bins         smallint[] not null,
    ttft_ms_counts       bigint[]   not null,
    latency_ms_bins      smallint[] not null,
    latency_ms_counts    bigint[]   not null
);
-- what every reader reads: one row per hour x model x metric x non-empty bin;
-- metric: 'input_tokens' | 'output_tokens' | 'ttft_ms' | 'latency_ms'.
create view if not exists fct_histogram_hourly as
select hour_utc, model, 'input_tokens' as metric, unnest(input_tokens_bins) as bin,
       unnest(input_tokens_counts) as count
from fct_histogram_hourly_bins
union all
select hour_utc, model, 'output_tokens', unnest(output_tokens_bins), unnest(output_tokens_counts)
from fct_histogram_hourly_bins
union all
select hour_utc, model, 'ttft_ms', unnest(ttft_ms_bins), unnest(ttft_ms_counts)
from fct_histogram_hourly_bins
union all
select hour_utc, model, 'latency_ms', unnest(latency_ms_bins), unnest(latency_ms_counts)
from fct_histogram_hourly_bins;
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
