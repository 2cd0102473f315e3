-- drop the temporary view of histogram rows that capplan.profile.refresh.store_histogram_rows packed.
drop view if exists profile_histogram_rows
