-- requests of the hours fed by metrics (capplan/metrics/), which carry no per-request status, TTFT or latency:
-- all of them (the SLO stage's per-minute SLIs cannot see them), and those of rate series (source
-- 'rates:...'), which have no latency or TTFT histograms either.
select
    coalesce(sum(requests), 0)::bigint                                          as requests,
    coalesce(sum(requests) filter (where source like 'rates:%'), 0)::bigint     as rate_requests
from metrics_ledger
