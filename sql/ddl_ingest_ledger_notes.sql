-- the ledger's notes column (added after the ledger was first written, so older databases get it here):
-- what the file's values suggested was wrong though it loaded, e.g. arrivals before 2000 (capplan.ingest.notes).
alter table ingest_ledger add column if not exists notes varchar[]
