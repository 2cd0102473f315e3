"""Partitioned roll-ups: build the traffic profile without one process reading every raw row.

Raw logs that live as Hive-partitioned files (``root/dt=YYYY-MM-DD/part-*.parquet``), or as
plain file lists, are rolled up one partition at a time, each on its own DuckDB:

1. :func:`discover_partitions` lists a source's partitions (a ``dt=`` folder, or one file) with a
   fingerprint of their files (name, size, mtime); :func:`pending_partitions` keeps those the
   central ledger has not rolled up with that fingerprint (new or changed partitions).
2. :func:`roll_up_partition` runs where the data is (a Dask worker, or this process): it loads the
   partition's files into a private in-memory DuckDB with the ingest's own rules
   (:func:`capplan.ingest.load_file`, ``sql/stg_requests.sql``), rolls them up with the profile's
   mergeable contract (:func:`capplan.profile.refresh.rollup_partition`) and returns only small tables:
   hourly traffic rows, histogram bins, peak in flight per hour, the plan's measured inputs, SLO
   and drift roll-ups (:data:`PLAN_INPUTS`) and the quarantined rows with their reasons.
3. :func:`store_rollups` runs at the centre: one transaction records each partition in
   ``partition_ledger``, replaces a changed partition's roll-up rows, and re-merges only the hours
   those partitions touch into ``fct_traffic_hourly``, ``fct_histogram_hourly`` and
   ``fct_concurrency_hourly`` (merge SQL). Raw rows never reach the central database.
4. The plan's other readers (measured request mix, SLO, drift) read through :mod:`capplan.rollups`:
   the same roll-up of ``requests`` with the stored partitions' rows appended, so one code path
   serves file ingest, partitions, or both.

One module per job: :mod:`~capplan.partitioned.discover` (1), :mod:`~capplan.partitioned.rollup`
(2), :mod:`~capplan.partitioned.store` (3) and :mod:`~capplan.partitioned.tables` (the central
tables); this package re-exports their public names.

Counts, sums and histogram bins merge exactly whatever the partitioning; the busiest second per
hour (a max) is exact when each UTC hour lies in one partition, as with ``dt=`` day folders, and a
lower bound in the hours :func:`shared_hours` lists. The peak in flight (also a max) is a lower bound
in the first minutes of a partition, while requests of the one before are still in flight. See
``docs/partitioned.md``.
"""

from __future__ import annotations

from capplan.partitioned.discover import HIVE_DAY, Partition, PartitionError, discover_partitions, pending_partitions
from capplan.partitioned.rollup import PartitionRollup, duckdb_threads, roll_up_partition
from capplan.partitioned.store import RollupSummary, merge_hours, shared_hours, store_rollups
from capplan.partitioned.tables import ROLLUP_TABLES, ensure_tables

__all__ = ["HIVE_DAY", "ROLLUP_TABLES", "Partition", "PartitionError", "PartitionRollup", "RollupSummary",
           "discover_partitions", "duckdb_threads", "ensure_tables", "merge_hours", "pending_partitions",
           "roll_up_partition", "shared_hours", "store_rollups"]
