-- the stored load-test runs, of one pool ($pool) or of all (null), in sweep order: setup, then rate.
with runs as (
    select * from load_tests
),

final as (
    select *
    from runs
    where $pool::varchar is null or pool = $pool::varchar
    order by pool, tool, model_id, gpu, tensor_parallel, replicas, gpus_per_replica,
             target_requests_per_s nulls last, max_concurrency, file_path, run_index
)

select * from final
