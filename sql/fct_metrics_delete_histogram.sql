-- drop the histogram roll-up rows of the hours a metrics chunk is about to store.
delete from fct_histogram_hourly_bins where hour_utc = any($hours)
