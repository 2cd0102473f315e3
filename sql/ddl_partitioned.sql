-- partitioned roll-ups (capplan/partitioned/): the central database keeps the ledger of partitions,
-- each partition's hourly roll-ups and its quarantined rows; raw request rows never come here.
create sequence if not exists partition_id_seq start 1;
create table if not exists partition_ledger (
    partition_id      integer   primary key default nextval('partition_id_seq'),
    source            varchar   not null,  -- source name from [[cluster.sources]]
    path              varchar   not null,  -- partition folder (dt=YYYY-MM-DD) or the file itself, absolute
    files             varchar[] not null,  -- the partition's files, absolute, sorted
    size_bytes        bigint    not null,  -- total size of the files [bytes]
    stat_sha256       varchar   not null,  -- hex SHA-256 of (name, size, mtime) of the files: the change test
    content_sha256    varchar   not null,  -- hex SHA-256 of the files' own SHA-256s, computed by the worker
    rows_read         bigint    not null,  -- [requests]
    rows_rolled_up    bigint    not null,  -- rows that passed the ingest rules [requests]
    rows_quarantined  bigint    not null,  -- rows_read = rows_rolled_up + rows_quarantined [requests]
    first_hour_utc    timestamp,           -- first UTC hour with rolled-up rows; null if none passed
    last_hour_utc     timestamp,           -- last UTC hour with rolled-up rows
    status            varchar   not null,  -- 'current' | 'replaced' (superseded by a newer roll-up)
    rolled_up_at_utc  timestamp not null   -- when the centre stored the roll-up, UTC
);
-- each current partition's own roll-up; fct_traffic_hourly / fct_histogram_hourly are their merge.
create table if not exists partition_traffic_hourly (
    partition_id         integer   not null,  -- partition_ledger.partition_id
    hour_utc             timestamp not null,  -- start of the hour, UTC
    model                varchar   not null,  -- model name, or '__all__'
    requests             bigint    not null,  -- [requests]
    errors               bigint    not null,  -- [requests]
    valid_events         bigint    not null,  -- [requests]
    success_events       bigint    not null,  -- [requests]
    input_tokens_sum     bigint    not null,  -- [tokens]
    output_tokens_sum    bigint    not null,  -- [tokens]
    ttft_ms_sum          double    not null,  -- [ms]
    ttft_count           bigint    not null,  -- [requests]
    latency_ms_sum       double    not null,  -- [ms]
    latency_count        bigint    not null,  -- [requests]
    peak_second_requests bigint    not null   -- busiest aligned UTC second within this partition [requests]
);
create table if not exists partition_histogram_hourly (
    partition_id integer   not null,  -- partition_ledger.partition_id
    hour_utc     timestamp not null,  -- start of the hour, UTC
    model        varchar   not null,  -- model name, or '__all__'
    metric       varchar   not null,  -- 'input_tokens' | 'output_tokens' | 'ttft_ms' | 'latency_ms'
    bin          smallint  not null,  -- log-bin index (sql/ddl_profile.sql)
    count        bigint    not null   -- [requests]
);
-- rows of a partition that broke an ingest rule (sql/stg_requests.sql), with their reasons.
create table if not exists partition_quarantine (
    partition_id integer not null,  -- partition_ledger.partition_id
    path         varchar not null,  -- source file
    row_number   bigint  not null,  -- 1-based data row number in the file
    rule         varchar not null,  -- rule broken, e.g. 'timestamp_unparseable'
    detail       varchar not null,  -- column, value, what was expected
    raw          json    not null   -- the raw values of the row, as read
);
-- each current partition's peak in flight per hour over its own requests; fct_concurrency_hourly is
-- their max per hour and model (a lower bound in an hour reached by several partitions' requests).
create table if not exists partition_concurrency_hourly (
    partition_id     integer   not null,  -- partition_ledger.partition_id
    hour_utc         timestamp not null,  -- start of the hour, UTC
    model            varchar   not null,  -- model name, or '__all__'
    concurrency_peak bigint    not null   -- [requests in flight]
);
-- the plan's measured inputs, SLO and drift inputs of each current partition: mergeable roll-ups
-- (sql/int_plan_request_mix_hourly.sql, int_plan_kv_tokens_hourly.sql, int_slo_minute_rollup.sql,
-- int_drift_daily_histogram.sql); readers add them to the same roll-ups of `requests` and sum.
create table if not exists partition_request_mix_hourly (
    partition_id      integer   not null,  -- partition_ledger.partition_id
    hour_utc          timestamp not null,  -- start of the hour, UTC
    model             varchar   not null,
    tenant            varchar,             -- null when not logged
    first_ts_utc      timestamp not null,  -- oldest request of the hour, any status, UTC
    last_ts_utc       timestamp not null,  -- newest request of the hour, any status, UTC
    requests          bigint    not null,  -- every status [requests]
    successes         bigint    not null,  -- 2xx [requests]
    input_tokens_sum  bigint    not null,  -- over 2xx [tokens]
    output_tokens_sum bigint    not null,  -- over 2xx [tokens]
    latency_count     bigint    not null,  -- 2xx with latency logged [requests]
    latency_ms_sum    double    not null   -- over those [ms]
);
create table if not exists partition_kv_tokens_hourly (
    partition_id integer   not null,  -- partition_ledger.partition_id
    hour_utc     timestamp not null,  -- start of the hour, UTC
    model        varchar   not null,  -- a pool's KV quantile is over its own models (capplan/plan/pools.py)
    kv_tokens    bigint    not null,  -- input + output tokens of a 2xx request [tokens]
    requests     bigint    not null   -- 2xx requests with exactly that many [requests]
);
create table if not exists partition_slo_minute (
    partition_id      integer   not null,  -- partition_ledger.partition_id
    minute_utc        timestamp not null,  -- start of the minute, UTC
    model             varchar   not null,
    ttft_threshold_ms double    not null,  -- an SLO's TTFT threshold; 'infinity' = none [ms]
    requests          bigint    not null,  -- every status [requests]
    client_errors     bigint    not null,  -- 4xx other than 408 and 429 [requests]
    good              bigint    not null   -- 2xx with ttft_ms <= threshold or not logged [requests]
);
create table if not exists partition_drift_daily_histogram (
    partition_id integer  not null,  -- partition_ledger.partition_id
    day_utc      date     not null,  -- UTC calendar day
    model        varchar  not null,
    metric       varchar  not null,  -- 'input_tokens' | 'output_tokens'
    bin          smallint not null,  -- log-bin index, gamma = 2^(1/4) (capplan.rollups.drift_histogram_params)
    requests     bigint   not null,  -- 2xx [requests]
    tokens_sum   bigint   not null   -- [tokens]
);
