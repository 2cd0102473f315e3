-- forget the hours of files $file_ids (null: of every file) before they are recorded afresh.
delete from profile_file_hours
where $file_ids::integer[] is null or file_id in (select unnest($file_ids::integer[]))
