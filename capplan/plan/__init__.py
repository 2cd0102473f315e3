"""The monthly plan's own arithmetic, apart from Prefect: which months, what demand, which inputs.

The Prefect flow (:mod:`capplan.flows.plan`) calls these between the stages; they take
and return plain frames so they are tested without a server. One module per job:

- :mod:`.calendar`: the planned months and the forecast horizon;
- :mod:`.traffic`: hourly and daily traffic of all models, and its forecast;
- :mod:`.inputs`: the request mix measured from the logs (:class:`~.inputs.MeasuredInputs`);
- :mod:`.fleet`: the fleet per month and per hour at P10/P50/P90;
- :mod:`.costing`: the cost of that fleet per level;
- :mod:`.evidence`: the SLO and drift stages' evidence for the report;
- :mod:`.assumptions`: the assumptions table (measured vs assumed, with units);
- :mod:`.notes`: the ingest notes the report shows.
"""
