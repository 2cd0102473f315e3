-- the one definition of a good SLI event (docs/slo_and_drift.md), created per connection as a temp
-- macro by capplan.db.create_macros (after sql/ddl_macro_sli_success.sql, which it calls).
-- sli_good(status, ttft_ms, ttft_threshold_ms): a success (2xx) whose time to first token is at most
--   the threshold [ms]; a success whose TTFT was not logged is good (its latency cannot be judged);
--   'infinity' as the threshold makes every success good.
create or replace temp macro sli_good(status, ttft_ms, ttft_threshold_ms) as
    sli_success(status) and (ttft_ms is null or ttft_ms <= ttft_threshold_ms)
