-- drop the histogram roll-up rows of the hours a metrics chunk is about to store.
delete from fct_histogram_hourly where hour_utc = any($hours)
