-- shift the quarantine row numbers of file $file_id from scan order to file order, when the
-- CSV reader rejected lines (those are missing from the scan): the k-th scanned row is data
-- row k + #{rejected rows j : gap_j < k}, where gap_j = r_j - j is the number of rows the scan
-- returned before the j-th rejected data row r_j (j 1-based, r sorted).
update quarantine
set row_number = row_number + (
    select count(*) from unnest(cast($gaps as bigint[])) as g(gap) where g.gap < quarantine.row_number
)
where file_id = $file_id
