-- drop the rows of fct_traffic_hourly in the UTC hours [$start_utc, $end_utc) (a null bound: unbounded),
-- before those hours are rolled up again.
delete from fct_traffic_hourly
where hour_utc >= coalesce($start_utc::timestamp, '-infinity'::timestamp)
    and hour_utc < coalesce($end_utc::timestamp, 'infinity'::timestamp)
