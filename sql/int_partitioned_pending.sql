-- discovered partitions (registered as `partitions_found`: source, path, stat_sha256) that have no current
-- roll-up with the same file fingerprint: new partitions and partitions whose files changed.
with

found as (
    select source, path, stat_sha256 from partitions_found
),

rolled_up as (
    select source, path, stat_sha256 from partition_ledger where status = 'current'
),

final as (
    select f.source, f.path, r.stat_sha256 is not null as replaces
    from found as f
    left join rolled_up as r on f.source = r.source and f.path = r.path
    where r.stat_sha256 is distinct from f.stat_sha256
)

select * from final order by source, path
