-- the file ids of `requests` above $last_file_id (the highest the roll-ups have seen): files ingested
-- since; only their row groups are read (each row group's min/max file id prunes the rest).
select distinct file_id
from requests
where file_id > $last_file_id
order by file_id
