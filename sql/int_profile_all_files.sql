-- every file id with rows in `requests`: a full rebuild recomputes the hours of all of them.
select distinct file_id from requests
