-- drop the old histogram table renamed by sql/ddl_profile_migrate_histogram_lists.sql, once its bins are packed.
drop table profile_histogram_lists
