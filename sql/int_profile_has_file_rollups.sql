-- 1 when the roll-ups hold rows of ingested files (profile_file_hours is not empty), else 0
select (count(*) > 0)::integer as found from (select 1 from profile_file_hours limit 1)
