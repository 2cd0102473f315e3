-- the TTFT thresholds the stored partitions' SLO roll-ups hold, ascending. [ms]
select distinct ttft_threshold_ms from partition_slo_minute order by 1
