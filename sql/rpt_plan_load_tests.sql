-- the stored load-test runs of the plan's pools ($pools, a list of pool names), in sweep order: setup, then rate.
-- read-only: the plan reads what `capplan loadtest import` stored (sql/ddl_load_tests.sql).
with runs as (
    select * from load_tests
),

final as (
    select *
    from runs
    where list_contains($pools::varchar[], pool)
    order by pool, tool, model_id, gpu, tensor_parallel, replicas, gpus_per_replica,
             target_requests_per_s nulls last, max_concurrency, file_path, run_index
)

select * from final
