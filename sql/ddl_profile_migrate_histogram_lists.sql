-- migrate a `fct_histogram_hourly_bins` of two lists per metric (bins, counts) in place: it is renamed
-- `profile_histogram_lists`, whose rows capplan.profile.refresh.ensure_tables then stores as codes in a new
-- `fct_histogram_hourly_bins` (sql/int_profile_histogram_lists_as_codes.sql: the same bins and counts) before
-- dropping it (sql/ddl_profile_drop_histogram_lists_table.sql). Run inside one transaction,
-- after sql/ddl_profile_drop_histogram_view.sql. Fixed text: no value comes from outside.
alter table fct_histogram_hourly_bins rename to profile_histogram_lists
