-- the rows a refresh's scan-ahead cursor reads (capplan/profile/refresh.py): `profile_source` as a temp view of
-- `requests` on that cursor alone. Temp views are searched before the main schema, so it shadows the view the
-- refreshing connection keeps in its open transaction, which the cursor may neither see nor replace.
create or replace temp view profile_source as select * from requests
