-- drop the traffic roll-up rows of the hours a metrics chunk is about to store.
delete from fct_traffic_hourly where hour_utc = any($hours)
