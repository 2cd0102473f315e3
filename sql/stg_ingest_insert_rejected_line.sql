-- one line the CSV reader rejected into `quarantine`, at its data row, with the raw line as a JSON
-- string (capplan.ingest.rejects; lines are numbered in file order already).
-- parameters: $file_id, $path, $row_number, $rule, $detail, $line.
insert into quarantine
values (
    cast($file_id as integer),
    cast($path as varchar),
    cast($row_number as bigint),
    cast($rule as varchar),
    cast($detail as varchar),
    to_json(cast($line as varchar))
)
