-- the quarantine rows of file `$file_id`.
-- parameters: $file_id.
select count(*) from quarantine where file_id = $file_id
