-- the UTC hours partition $partition_id feeds: arrivals, and hours its requests are in flight.
select hour_utc from partition_traffic_hourly where partition_id = $partition_id
union
select hour_utc from partition_concurrency_hourly where partition_id = $partition_id
