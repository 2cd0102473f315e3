-- every stored partition's rows of this roll-up (sql/ddl_partitioned.sql), in the columns of its query over `requests`.
select * exclude (partition_id) from partition_request_mix_hourly
