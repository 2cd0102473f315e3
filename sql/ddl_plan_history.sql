-- what every plan run decided (capplan/history/store.py): one row per run, one per run × month × pool.
-- units are in the column names: _usd US dollars, _qps requests per second; timestamps are UTC.
create table if not exists plan_runs (
    run_id          varchar primary key,       -- uuid4 hex of the run
    created_utc     timestamp not null,        -- when the plan was made
    first_month     varchar not null,          -- YYYY-MM, the first planned month
    months          integer not null,          -- planned months [count]
    config_sha256   varchar not null,          -- sha-256 of the resolved config (JSON, sorted keys)
    code_version    varchar not null,          -- capplan's version (and git commit where known)
    data_from_utc   timestamp,                 -- first hour of traffic the plan read
    data_to_utc     timestamp                  -- last hour of traffic the plan read
);
create table if not exists plan_months (
    run_id              varchar not null,      -- plan_runs.run_id
    month               varchar not null,      -- YYYY-MM
    pool                varchar not null,      -- the pool, or '__fleet__' for the fleet total
    gpu                 varchar,               -- the pool's GPU type
    tensor_parallel     integer,               -- GPUs per replica
    requests_p10        double,                -- forecast requests in the month [requests]
    requests_p50        double,
    requests_p90        double,
    peak_qps_p10        double,                -- design peak [requests/s]
    peak_qps_p50        double,
    peak_qps_p90        double,
    gpus_p10            integer,               -- fleet at the design peak, with headroom [GPUs]
    gpus_p50            integer,
    gpus_p90            integer,
    binding             varchar,               -- what binds at P50: throughput | memory
    reserved_gpus       integer,               -- reserved GPUs committed [GPUs]
    gpu_hours_p50       double,                -- GPU-hours of the hourly P50 fleet over the month [GPU·h]
    cost_p10_usd        double,                -- the month's cost at each level [USD]
    cost_p50_usd        double,
    cost_p90_usd        double,
    on_demand_p50_usd   double,                -- the P50 cost by purchase option [USD]
    reserved_p50_usd    double,
    spot_p50_usd        double,
    throughput_source   varchar,               -- measured | calibrated | modelled | assumed
    primary key (run_id, month, pool)
);
