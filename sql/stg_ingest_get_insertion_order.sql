-- the session's `preserve_insertion_order`, to restore after a file's load (settings are not
-- transactional).
select current_setting('preserve_insertion_order')
