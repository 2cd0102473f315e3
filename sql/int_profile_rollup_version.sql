-- the roll-up definition version the stored roll-ups were refreshed under; null when never recorded
-- (roll-ups from a capplan before versions, or never refreshed)
select max(version) as version from profile_rollup_version
