-- a helper of the ingest staging query (sql/stg_requests.sql), created per connection as a temp
-- macro (inlined where used, so no call overhead).
-- ingest_text(value): the text of a raw VARCHAR value, spaces trimmed, null when empty or blank.
-- trim() copies every string; trimming only values that hold a space gives the same result at a
-- fraction of the cost on clean data (5 M ids: 0.35 s vs 1.0 s for trim; `contains` one memchr,
-- 0.08 s vs 0.11 s for testing both ends with starts_with/ends_with per 5 M values; measured).
create or replace temp macro ingest_text(value) as
    case
        when contains(value, ' ') then nullif(trim(value), '')
        else nullif(value, '')
    end
