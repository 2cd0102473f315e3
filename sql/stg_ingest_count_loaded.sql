-- the rows of file `$file_id` that passed every rule (the view `requests`).
-- parameters: $file_id.
select count(*) from requests where file_id = $file_id
