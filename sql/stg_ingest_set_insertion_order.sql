-- set `preserve_insertion_order` to `$preserve`: true while a file loads (written CSV rows are
-- numbered by their position), then back to what it was.
-- parameters: $preserve (boolean).
set preserve_insertion_order = $preserve
