-- record the roll-up definition version of this refresh; parameter: $version
delete from profile_rollup_version;
insert into profile_rollup_version values ($version::integer);
