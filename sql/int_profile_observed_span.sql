-- the observed span of the raw rows: first and last arrival in `requests` (UTC); nulls when empty.
-- with sql/int_profile_partition_span.sql, the span of the profile's exposure (capplan/profile/exposure.py).
-- a separate query, not part of sql/int_profile_rows.sql.
select min(ts_utc) as first_utc, max(ts_utc) as last_utc
from requests
