-- the longest latency in `requests` [ms]: how far before a range a request may start and still be in flight in it.
select coalesce(max(latency_ms), 0) as longest_latency_ms from requests
