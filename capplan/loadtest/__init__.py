"""Load tests in and out (issue 19): read vLLM, SGLang, GuideLLM, AIPerf / GenAI-Perf and llmperf results,
store them in the ``load_tests`` table, turn sweeps into a capacity at the SLO, flag untrustworthy
methods, and export the load test to run next from the request logs.

Modules: :mod:`~capplan.loadtest.formats` (one parser per tool), :mod:`~capplan.loadtest.store` (the
table), :mod:`~capplan.loadtest.capacity` (sweep -> capacity, pure), :mod:`~capplan.loadtest.hygiene`
(measurement checks, pure), :mod:`~capplan.loadtest.logs` (production figures read from the logs),
:mod:`~capplan.loadtest.workload` (trace maths, pure), :mod:`~capplan.loadtest.runbook` (PLAN.md text)
and :mod:`~capplan.loadtest.export` (the files written). See docs/loadtests.md.
"""
