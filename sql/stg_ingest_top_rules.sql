-- the rules of file `$file_id`'s quarantined rows, commonest first, with one detail each: for a file whose
-- every row was quarantined (capplan.ingest.notes.all_quarantined_message); one row per rule broken.
-- parameters: $file_id.
select rule, count(*) as rows, min(detail) as detail
from quarantine
where file_id = $file_id
group by rule
order by rows desc, rule
