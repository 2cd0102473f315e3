-- drop the histogram rows (fct_histogram_hourly_bins) of the UTC hours [$start_utc, $end_utc) (a null bound: unbounded),
-- before those hours are rolled up again.
delete from fct_histogram_hourly_bins
where hour_utc >= coalesce($start_utc::timestamp, '-infinity'::timestamp)
    and hour_utc < coalesce($end_utc::timestamp, 'infinity'::timestamp)
