-- one row per load-test run imported by `capplan loadtest import` (capplan/loadtest/store.py).
-- units are in the column names: _ms milliseconds, _s seconds, _per_s per second; timestamps are UTC.
create table if not exists load_tests (
    file_sha256           varchar not null,                  -- sha-256 of the file's bytes: re-importing the same content is a no-op
    run_index             integer not null,                  -- position of the run in its file, from 0
    file_path             varchar not null,                  -- the path imported
    imported_at_utc       timestamp not null,                -- UTC
    pool                  varchar not null,                  -- --pool as given, else the run's model id
    tool                  varchar not null,                  -- vllm | sglang | guidellm | aiperf | genai-perf | llmperf
    tool_version          varchar,
    model_id              varchar,                           -- model the tool sent requests to
    engine                varchar,                           -- the tool's backend / server kind
    settings_json         varchar,                           -- engine and benchmark settings the file records (JSON)
    gpu                   varchar,
    tensor_parallel       integer,
    replicas              integer not null,                  -- replicas behind the endpoint [count]
    gpus_per_replica      integer not null,                  -- [GPUs]
    started_at_utc        timestamp,                         -- UTC where the file says
    arrival_process       varchar not null,                  -- poisson | gamma | constant (open loop) | concurrency | burst (closed loop)
    target_requests_per_s double,                            -- offered rate; null for closed-loop runs [requests/s]
    burstiness            double,                            -- gamma shape of inter-arrival times, 1 = poisson
    max_concurrency       integer,                           -- offered requests in flight, or the client's cap [requests]
    duration_s            double,                            -- measured window [s]
    completed_requests    integer not null,                  -- [requests]
    failed_requests       integer,                           -- null when the tool does not report failures [requests]
    input_tokens_mean     double,                            -- measured [tokens/request]
    output_tokens_mean    double,                            -- measured [tokens/request]
    requests_per_s        double not null,                   -- achieved request throughput [requests/s]
    output_tokens_per_s   double,                            -- system output-token throughput [tokens/s]
    ttft_mean_ms          double,                            -- time to first token [ms]
    ttft_p50_ms           double,                            -- time to first token [ms]
    ttft_p90_ms           double,                            -- time to first token [ms]
    ttft_p95_ms           double,                            -- time to first token [ms]
    ttft_p99_ms           double,                            -- time to first token [ms]
    tpot_mean_ms          double,                            -- time per output token [ms]
    tpot_p50_ms           double,                            -- time per output token [ms]
    tpot_p90_ms           double,                            -- time per output token [ms]
    tpot_p95_ms           double,                            -- time per output token [ms]
    tpot_p99_ms           double,                            -- time per output token [ms]
    itl_mean_ms           double,                            -- inter-token latency (pooled gaps) [ms]
    itl_p50_ms            double,                            -- inter-token latency (pooled gaps) [ms]
    itl_p90_ms            double,                            -- inter-token latency (pooled gaps) [ms]
    itl_p95_ms            double,                            -- inter-token latency (pooled gaps) [ms]
    itl_p99_ms            double,                            -- inter-token latency (pooled gaps) [ms]
    e2el_mean_ms          double,                            -- end-to-end latency [ms]
    e2el_p50_ms           double,                            -- end-to-end latency [ms]
    e2el_p90_ms           double,                            -- end-to-end latency [ms]
    e2el_p95_ms           double,                            -- end-to-end latency [ms]
    e2el_p99_ms           double,                            -- end-to-end latency [ms]
    primary key (file_sha256, run_index)
)
