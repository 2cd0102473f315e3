-- session settings every capplan connection runs with: no progress bars in logs, and UTC as the
-- session time zone (every timestamp capplan stores is UTC wall time; casts never shift it)
set enable_progress_bar = false;
set TimeZone = 'UTC';
