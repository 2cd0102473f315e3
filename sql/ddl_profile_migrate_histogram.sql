-- migrate an old `fct_histogram_hourly` table (one row per bin) in place: it is renamed
-- `profile_histogram_rows`, whose bins capplan.profile.refresh.ensure_tables then packs into
-- `fct_histogram_hourly_bins` (sql/int_profile_pack_histogram.sql: the same bins and counts) before
-- dropping it (sql/ddl_profile_drop_histogram_rows_table.sql), so sql/ddl_profile.sql creates the
-- view of that name readers read. Run inside one transaction. Fixed text: no value comes from outside.
alter table fct_histogram_hourly rename to profile_histogram_rows
