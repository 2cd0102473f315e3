-- the one definition of a successful request (docs/slo_and_drift.md), created per connection as a temp
-- macro by capplan.db.create_macros.
-- sli_success(status): HTTP 2xx. Every success is a valid event (sql/ddl_macro_sli_valid.sql).
create or replace temp macro sli_success(status) as
    status between 200 and 299
