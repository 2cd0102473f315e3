-- the one definition of a valid SLI event (docs/slo_and_drift.md), created per connection as a temp
-- macro by capplan.db.create_macros (temp macros work on a read-only connection; a cursor has its own).
-- sli_valid(status): every request is a valid event except a client error, a 4xx other than
--   408 (request timeout: an LLM server answers it when generation overruns, so it is our latency) and
--   429 (throttled: our capacity). 408 and 429 are valid and bad; a 400/401/403/404/413/422 is the
--   caller's fault and no event at all.
-- used by sql/int_slo_minute_rollup.sql (the SLO stage), sql/rpt_hourly_sli.sql and
-- sql/int_profile_rows.sql (the profile), so the two stages count the same events.
create or replace temp macro sli_valid(status) as
    not (status between 400 and 499 and status not in (408, 429))
