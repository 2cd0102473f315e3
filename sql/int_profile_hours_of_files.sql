-- the UTC hours the rollups last saw files $file_ids touch (sql/int_profile_file_hours.sql).
select distinct hour_utc from profile_file_hours
where file_id in (select unnest($file_ids::integer[]))
