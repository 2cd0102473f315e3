-- share of requests that may run on spot: those to a model in $models or from a tenant in
-- $tenants (the batch/offline tier named in [cost]), over the most recent $window_days days of
-- data (ending at the newest request). successful requests only (2xx), like the sizing inputs.
-- output: one row; interruptible_share [fraction], requests [count].
with source_requests as (
    select ts_utc, model, tenant, status
    from requests
),

span as (
    select max(ts_utc) as last_ts_utc
    from source_requests
),

recent as (
    select r.model, r.tenant
    from source_requests as r, span as s
    where r.ts_utc > s.last_ts_utc - to_days($window_days::integer)
      and r.status between 200 and 299
),

flagged as (
    select
        -- tenant is null when not logged: such a request is interruptible only by its model
        list_contains($models::varchar[], model)
            or coalesce(list_contains($tenants::varchar[], tenant), false) as is_interruptible
    from recent
),

final as (
    select
        coalesce(avg(is_interruptible::integer), 0.0)::double as interruptible_share,
        count(*)                                              as requests
    from flagged
)

select * from final
