-- hours with per-partition rows but no central rows (e.g. after a full profile refresh cleared them).
select distinct hour_utc from partition_traffic_hourly
except
select distinct hour_utc from fct_traffic_hourly
