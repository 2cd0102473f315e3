-- delete every row (good and bad) of file `$file_id` from `request_rows`: the old version of a path
-- whose new content replaces it (same transaction as the new load).
-- parameters: $file_id.
delete from request_rows
where file_id = $file_id
