"""``capplan loadtest import|show|export`` end to end on the real files and generated logs."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from capplan.cli import app

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "loadtests"
runner = CliRunner()


def _invoke(*args):
    return runner.invoke(app, ["loadtest", *map(str, args)])


def _sweep_file(tmp_path: Path) -> Path:
    """A vLLM --append-result JSONL of five rates whose p99 TTFT crosses 1,000 ms between 3 and 4 requests/s."""
    lines = []
    for rate, ttft in ((1, 200.0), (2, 400.0), (3, 700.0), (4, 1300.0), (5, 4000.0)):
        lines.append(json.dumps({"model_id": "m", "request_rate": rate, "burstiness": 1.0, "duration": 100.0,
                                 "completed": rate * 100, "failed": 0, "total_input_tokens": rate * 50_000,
                                 "total_output_tokens": rate * 10_000, "request_throughput": float(rate),
                                 "output_throughput": rate * 100.0, "mean_ttft_ms": ttft / 2, "p99_ttft_ms": ttft,
                                 "mean_tpot_ms": 10.0, "p99_tpot_ms": 20.0}))
    path = tmp_path / "sweep.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


#: a config whose pool ``small`` serves two of the sample's log models, ``large`` the third
TWO_MODEL_POOLS = ('[[pools]]\nname = "small"\nmodels = ["llama-3.1-8b", "qwen2.5-7b"]\nmodel = "llama-3.1-8b"\n\n'
                   '[[pools]]\nname = "large"\nmodels = ["llama-3.1-70b"]\nmodel = "llama-3.1-70b"\n')


def _ingested(tmp_path: Path, config_text: str = "", start: dt.date = dt.date(2026, 3, 2)) -> tuple[Path, Path]:
    """Two generated days of the sample's three models ingested with `capplan ingest`, and a config file."""
    from capplan.sample import SampleSpec, write_sample

    logs = write_sample(SampleSpec(start=start, days=2, requests_per_day=2000, seed=5), tmp_path / "requests.parquet")
    db, config = tmp_path / "logs.duckdb", tmp_path / "capplan.toml"
    config.write_text(config_text, encoding="utf-8")
    assert runner.invoke(app, ["ingest", str(logs.paths[0]), "--db", str(db)]).exit_code == 0
    return db, config


def test_import_then_show_gives_the_capacity_per_replica_and_gpu(tmp_path):
    db = tmp_path / "t.duckdb"
    path = _sweep_file(tmp_path)
    first = _invoke("import", path, "--db", db, "--pool", "chat", "--replicas", "2", "--gpus-per-replica", "4",
                    "--json")
    assert first.exit_code == 0, first.output
    assert json.loads(first.stdout)["files"][0] | {"path": None} == {
        "path": None, "status": "imported", "tool": "vllm", "runs": 5, "pool": "chat"}
    again = _invoke("import", path, "--db", db, "--json")
    assert json.loads(again.stdout)["files"][0]["status"] == "unchanged"
    shown = _invoke("show", "--db", db, "--ttft-ms-max", "1000", "--json")
    assert shown.exit_code == 0, shown.output
    sweep, = json.loads(shown.stdout)["sweeps"]
    assert sweep["capacity"]["kind"] == "interpolated" and sweep["capacity"]["requests_per_s"] == pytest.approx(3.5)
    assert sweep["requests_per_s_per_replica"] == pytest.approx(1.75)
    assert sweep["requests_per_s_per_gpu"] == pytest.approx(3.5 / 8)
    assert sweep["clean"] is True
    table = _invoke("show", "--db", db, "--ttft-ms-max", "1000")
    assert table.exit_code == 0 and "interpolated" in table.output


def test_show_defaults_to_the_config_ttft_threshold(tmp_path):
    db = tmp_path / "t.duckdb"
    _invoke("import", _sweep_file(tmp_path), "--db", db)
    config = tmp_path / "capplan.toml"
    config.write_text("[[slos]]\nname = \"fast\"\nttft_threshold_ms = 550.0\n")
    shown = json.loads(_invoke("show", "--db", db, "--config", config, "--json").stdout)
    assert shown["targets"]["ttft_ms_max"] == 550.0
    assert shown["sweeps"][0]["capacity"]["requests_per_s"] == pytest.approx(2.5)  # 2 + (550 - 400) / 300


@pytest.mark.skipif(not SHARED.is_dir(), reason=f"real load-test files not present at {SHARED}")
def test_every_real_file_imports_and_flags_show(tmp_path):
    db = tmp_path / "t.duckdb"
    files = sorted(p for p in SHARED.rglob("*") if p.suffix in (".json", ".jsonl"))
    result = _invoke("import", *files, "--db", db, "--json")
    assert result.exit_code == 0, result.output
    assert sum(f["runs"] for f in json.loads(result.stdout)["files"]) == 33
    shown = json.loads(_invoke("show", "--db", db, "--json").stdout)
    flags = {f["name"] for r in shown["runs"] for f in r["flags"]}
    assert {"closed_loop", "starved", "under_paced"} <= flags


def test_errors_are_one_line_with_an_exit_code(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    result = _invoke("import", bad, "--db", tmp_path / "t.duckdb")
    assert result.exit_code == 1 and "bad.json: not a load-test layout" in result.output
    assert _invoke("import", tmp_path / "missing.json", "--db", tmp_path / "t.duckdb").exit_code == 2
    assert _invoke("import", bad, "--tool", "locust").exit_code == 2
    assert _invoke("show", "--db", tmp_path / "none.duckdb").exit_code == 1


def test_export_on_generated_logs(tmp_path):
    db, _config = _ingested(tmp_path)
    out = tmp_path / "next"
    result = _invoke("export", "--db", db, "--days", "1", "--out", out, "--rate", "3", "--json")
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["trace_rate_rps"] == 3.0 and len(payload["rates_rps"]) == 6
    assert {p.name for p in out.iterdir()} == {"trace.jsonl", "lengths.jsonl", "lengths.json", "PLAN.md"}
    missing = _invoke("export", "--db", db, "--model", "nope", "--out", out)
    assert missing.exit_code == 1 and "models there" in missing.output


def test_export_sweeps_around_the_newest_stored_plans_p90_peak(tmp_path, stored_plan_row):
    """With a stored plan for the pool, PLAN.md's rates span 0.25-1.5 x that plan's highest P90 design peak per
    replica (the run of 1 Nov: months at 1.5 and 3.0 req/s, so 3.0 / 2 replicas = 1.5); without one, the
    observed peak, said as such."""
    from capplan.db import connect
    from capplan.history.store import new_run, record_plan

    db, config = _ingested(tmp_path, '[[pools]]\nname = "chat"\nmodels = ["*"]\n', start=dt.date(2026, 10, 2))
    observed = json.loads(_invoke("export", "--db", db, "--config", config, "--pool", "chat", "--out", tmp_path / "a",
                                  "--json").stdout)
    assert observed["design_peak_qps"] == observed["peak_hour_qps"]
    assert "no stored plan" in observed["design_peak_source"]
    with connect(db) as con:
        for created, scale in (("2026-10-01", 9.0), ("2026-11-01", 1.0)):  # the newer run wins
            rows = [stored_plan_row(m, "chat", scale * k) for m, k in (("2026-11", 1.0), ("2026-12", 2.0))]
            record_plan(con, new_run("2026-11", 2, {}, data_from_utc=None, data_to_utc=None,
                                     created_utc=dt.datetime.fromisoformat(created)), pd.DataFrame(rows))
    result = _invoke("export", "--db", db, "--config", config, "--pool", "chat", "--replicas", "2", "--out",
                     tmp_path / "b", "--json")
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["design_peak_qps"] == pytest.approx(3.0) and "P90 design peak" in payload["design_peak_source"]
    assert min(payload["rates_rps"]) == pytest.approx(0.25 * 1.5) and max(payload["rates_rps"]) == pytest.approx(1.5 * 1.5)
    assert "3 requests/s (the P90 design peak of plan run" in (tmp_path / "b" / "PLAN.md").read_text()
    narrowed = json.loads(_invoke("export", "--db", db, "--config", config, "--pool", "chat", "--model",
                                  "qwen2.5-7b", "--out", tmp_path / "c", "--json").stdout)
    assert narrowed["models"] == ["qwen2.5-7b"] and narrowed["design_peak_qps"] == narrowed["peak_hour_qps"]
    assert "--model qwen2.5-7b narrows pool chat" in narrowed["design_peak_source"]


def test_export_of_a_pool_takes_every_row_of_its_log_models(tmp_path):
    """``--pool small`` of a config whose pool serves two log models exports both models' rows in the window
    (counted straight from ``requests``); ``--model`` narrows to one; a pool or model the logs lack is an error."""
    from capplan.db import connect

    db, config = _ingested(tmp_path, TWO_MODEL_POOLS)
    result = _invoke("export", "--db", db, "--config", config, "--pool", "small", "--days", "1", "--rate", "2",
                     "--out", tmp_path / "small", "--json")
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["pool"] == "small" and payload["models"] == ["llama-3.1-8b", "qwen2.5-7b"]
    with connect(db, read_only=True) as con:
        counted = dict(con.execute(
            "select model, count(*) from requests where ts_utc >= (select date_trunc('hour', max(ts_utc)) "
            "+ interval 1 hour - interval 1 day from requests where model in ('llama-3.1-8b', 'qwen2.5-7b')) "
            "group by model").fetchall())
    assert payload["requests"] == counted["llama-3.1-8b"] + counted["qwen2.5-7b"]
    assert len((tmp_path / "small" / "trace.jsonl").read_text().splitlines()) == payload["requests"]
    one = json.loads(_invoke("export", "--db", db, "--config", config, "--pool", "small", "--model", "qwen2.5-7b",
                             "--days", "1", "--out", tmp_path / "one", "--json").stdout)
    assert one["models"] == ["qwen2.5-7b"] and one["requests"] == counted["qwen2.5-7b"]
    default = json.loads(_invoke("export", "--db", db, "--config", config, "--days", "1", "--out", tmp_path / "d",
                                 "--json").stdout)
    assert default["pool"] == "small" and default["requests"] == payload["requests"]  # the busiest model's pool
    wrong = _invoke("export", "--db", db, "--config", config, "--pool", "large", "--model", "qwen2.5-7b",
                    "--out", tmp_path / "x")
    assert wrong.exit_code == 1 and "not served by pool 'large'" in wrong.output
    unknown = _invoke("export", "--db", db, "--config", config, "--pool", "nope", "--out", tmp_path / "x")
    assert unknown.exit_code == 1 and "no pool 'nope'" in unknown.output and "small, large" in unknown.output


def test_show_judges_each_sweep_at_its_pools_targets_unless_flags_say_otherwise(tmp_path):
    """Runs filed under a [[pools]] entry are judged as the plan judges that pool: its ttft_ms_max (500 ms:
    2 + (500 - 400) / 300 req/s), while another sweep keeps the config's default; a flag overrides both."""
    db, config = tmp_path / "t.duckdb", tmp_path / "capplan.toml"
    config.write_text('[[slos]]\nname = "fast"\nttft_threshold_ms = 550.0\n\n'
                      '[[pools]]\nname = "chat"\nmodels = ["m"]\nttft_ms_max = 500.0\n', encoding="utf-8")
    _invoke("import", _sweep_file(tmp_path), "--db", db, "--pool", "chat")
    other = tmp_path / "other"
    other.mkdir()
    second = _sweep_file(other)
    second.write_text(second.read_text().replace('"model_id": "m"', '"model_id": "n"'))  # another file's content
    _invoke("import", second, "--db", db, "--pool", "not-in-config", "--replicas", "2")
    shown = json.loads(_invoke("show", "--db", db, "--config", config, "--json").stdout)
    by_pool = {s["setup"]["pool"]: s for s in shown["sweeps"]}
    assert by_pool["chat"]["targets"]["ttft_ms_max"] == 500.0
    assert by_pool["chat"]["capacity"]["requests_per_s"] == pytest.approx(2 + 100 / 300)
    assert by_pool["not-in-config"]["capacity"]["requests_per_s"] == pytest.approx(2.5)  # the SLO's 550 ms
    flagged = json.loads(_invoke("show", "--db", db, "--config", config, "--ttft-ms-max", "1000", "--json").stdout)
    assert [s["capacity"]["requests_per_s"] for s in flagged["sweeps"]] == [pytest.approx(3.5)] * 2


@pytest.mark.skipif(not SHARED.is_dir(), reason="../shared/loadtests not beside the repo")
def test_import_without_pool_files_each_run_under_the_pool_that_runs_its_model(tmp_path):
    """vLLM's real files record ``meta-llama/Llama-3.1-8B-Instruct``: with pools in the config they belong to the
    pool that runs ``llama-3.1-8b`` (not the first pool, not a pool named after the id)."""
    config = tmp_path / "capplan.toml"
    config.write_text('[[pools]]\nname = "large"\nmodels = ["big"]\nmodel = "llama-3.1-70b"\n\n'
                      '[[pools]]\nname = "chat"\nmodels = ["small"]\nmodel = "llama-3.1-8b"\n', encoding="utf-8")
    files = sorted((SHARED / "vllm-bench-serve").glob("H100_*.json"))[:2]
    result = _invoke("import", *files, "--config", config, "--db", tmp_path / "lt.duckdb", "--json")
    assert result.exit_code == 0, result.output
    assert [f["pool"] for f in json.loads(result.output)["files"]] == ["chat", "chat"]


def test_import_gpu_names_the_replicas_gpu_and_is_checked(tmp_path):
    db = tmp_path / "t.duckdb"
    result = _invoke("import", _sweep_file(tmp_path), "--db", db, "--gpu", "h100-sxm-80gb", "--json")
    assert result.exit_code == 0, result.output
    shown = json.loads(_invoke("show", "--db", db, "--ttft-ms-max", "1000", "--json").stdout)
    assert {r["gpu"] for r in shown["runs"]} == {"H100-SXM-80GB"}  # the catalogue's spelling
    unknown = _invoke("import", _sweep_file(tmp_path), "--db", db, "--gpu", "H999")
    assert unknown.exit_code == 2 and "H999" in unknown.output and "H100-SXM-80GB" in unknown.output


def test_import_gpu_that_contradicts_the_file_is_refused_and_stores_nothing(tmp_path):
    path = tmp_path / "named.jsonl"
    path.write_text(_sweep_file(tmp_path).read_text().replace('"model_id": "m"', '"model_id": "m", "gpu": "A100"'))
    db = tmp_path / "t.duckdb"
    result = _invoke("import", path, "--db", db, "--gpu", "H100-SXM-80GB")
    assert result.exit_code == 1 and "names GPU 'A100'" in result.output
    assert "no load tests" in _invoke("show", "--db", db, "--ttft-ms-max", "1000").output


def test_show_checks_each_runs_token_mix_against_its_pools_logs(tmp_path):
    """Runs filed under pool ``small`` (llama-3.1-8b and qwen2.5-7b in the logs) are checked against the mix of
    both models' requests of the last day taken together (the mean counted here straight from ``requests``):
    the sweep's 500 input tokens are far below it, so every run carries the token_mix flag with that mean; runs
    of a pool the logs do not serve are not checked, and the note names it; ``--model`` checks every run against
    that one model's mix instead."""
    from capplan.db import connect

    db, config = _ingested(tmp_path, TWO_MODEL_POOLS)
    _invoke("import", _sweep_file(tmp_path), "--db", db, "--pool", "small")
    other = tmp_path / "other"
    other.mkdir()
    second = _sweep_file(other)
    second.write_text(second.read_text().replace('"model_id": "m"', '"model_id": "n"'))
    _invoke("import", second, "--db", db, "--pool", "elsewhere")
    with connect(db, read_only=True) as con:
        (mean,) = con.execute(
            "select avg(input_tokens) from requests where model in ('llama-3.1-8b', 'qwen2.5-7b') and ts_utc >= "
            "(select date_trunc('hour', max(ts_utc)) + interval 1 hour - interval 1 day from requests "
            "where model in ('llama-3.1-8b', 'qwen2.5-7b'))").fetchone()
    result = _invoke("show", "--db", db, "--config", config, "--days", "1", "--ttft-ms-max", "1000", "--json")
    assert result.exit_code == 0, result.output
    shown = json.loads(result.stdout)
    assert shown["production_mix"]["pools"]["small"]["models"] == ["llama-3.1-8b", "qwen2.5-7b"]
    assert shown["production_mix"]["pools"]["small"]["input_tokens_mean"] == pytest.approx(mean, rel=1e-9)
    small = [r for r in shown["runs"] if r["pool"] == "small"]
    assert len(small) == 5
    for run in small:
        flag = next(f for f in run["flags"] if f["name"] == "token_mix")
        assert flag["values"]["input_tokens_production_mean"] == pytest.approx(mean, rel=1e-9)
    assert all(not r["flags"] for r in shown["runs"] if r["pool"] == "elsewhere")
    assert "token-mix check skipped for elsewhere" in shown["note"]
    by_model = json.loads(_invoke("show", "--db", db, "--config", config, "--days", "1", "--model", "llama-3.1-70b",
                                  "--json").stdout)
    assert by_model["production_mix"]["model"] == "llama-3.1-70b" and by_model["note"] is None
    assert {r["pool"] for r in by_model["runs"] if any(f["name"] == "token_mix" for f in r["flags"])} == {
        "small", "elsewhere"}


def test_export_on_the_bundled_sample_replays_a_two_model_pool(tmp_path):
    """The issue's proof on the bundled sample (data/sample, ingested with `capplan ingest`): pool ``small`` serves
    llama-3.1-8b and qwen2.5-7b; `capplan loadtest export --pool small --days 7 --rate 10` writes a trace of every
    row of both models in the 7 x 24 hours ending with their newest (counted here from ``requests``), whose
    p50/p90/p99 input and output lengths (exact order statistics of the trace) are within the profile's histogram
    error bound of the two models' merged histograms, and whose arrival rate ((n - 1) / span) is 10 requests/s
    within 2 %."""
    import numpy as np

    from capplan.db import connect
    from capplan.loadtest.workload import arrival_rate_rps
    from capplan.profile import token_stats
    from capplan.profile.bins import HISTOGRAM_RELATIVE_ERROR

    sample = sorted((Path(__file__).resolve().parents[2] / "data" / "sample").glob("requests-*.parquet"))
    db, config = tmp_path / "bundled.duckdb", tmp_path / "capplan.toml"
    config.write_text(TWO_MODEL_POOLS, encoding="utf-8")
    assert runner.invoke(app, ["ingest", *map(str, sample), "--db", str(db)]).exit_code == 0
    result = _invoke("export", "--db", db, "--config", config, "--pool", "small", "--days", "7", "--rate", "10",
                     "--out", tmp_path / "next", "--json")
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["models"] == ["llama-3.1-8b", "qwen2.5-7b"]
    rows = [json.loads(line) for line in (tmp_path / "next" / "trace.jsonl").read_text().splitlines()]
    trace = {k: np.array([r[k] for r in rows]) for k in ("timestamp", "input_length", "output_length")}
    with connect(db, read_only=True) as con:
        since, = con.execute("select date_trunc('hour', max(ts_utc)) + interval 1 hour - interval 7 day from requests "
                             "where model in ('llama-3.1-8b', 'qwen2.5-7b')").fetchone()
        counted = dict(con.execute("select model, count(*) from requests where ts_utc >= ? group by model",
                                   [since]).fetchall())
        logs = token_stats(con, "small", since, ["llama-3.1-8b", "qwen2.5-7b"])["small"]
    assert len(rows) == payload["requests"] == counted["llama-3.1-8b"] + counted["qwen2.5-7b"] == logs["requests"]
    assert counted["qwen2.5-7b"] > 1000 and counted["llama-3.1-8b"] > 1000
    for column, metric in (("input_length", "input_tokens"), ("output_length", "output_tokens")):
        for name, q in (("p50", 0.5), ("p90", 0.9), ("p99", 0.99)):
            exact = np.quantile(trace[column], q, method="inverted_cdf")
            assert abs(logs[metric][name] - exact) <= HISTOGRAM_RELATIVE_ERROR * exact, (column, name)
    assert arrival_rate_rps(trace["timestamp"] * 1000) == pytest.approx(10.0, rel=0.02)
