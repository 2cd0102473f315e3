-- drop the view fct_histogram_hourly of an older histogram layout, so sql/ddl_profile.sql creates the current one.
drop view if exists fct_histogram_hourly
