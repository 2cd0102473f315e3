-- delete the quarantine rows of file `$file_id`: the old version of a path whose new content replaces
-- it (same transaction as the new load).
-- parameters: $file_id.
delete from quarantine
where file_id = $file_id
