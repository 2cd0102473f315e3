"""capplan/plan/fleet.py: design peaks per month, the fleet per month and per hour, the size stage's results."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pandera.pandas as pa
import pytest

from capplan.config import CapplanConfig
from capplan.plan import fleet as plan
from capplan.sizing.fleet import latency_curve, size_fleet


@pytest.fixture
def spec():
    return CapplanConfig().sizing.fleet_spec()


def test_monthly_peak_qps_golden(flat_forecast):
    fc = flat_forecast("2026-12-01", 31 * 24 + 24, 10.0)
    fc.loc["2026-12-15 14:00", ["mean", "lo_80", "hi_80"]] = [20.0, 16.0, 26.0]  # the December peak hour
    out = plan.monthly_peak_qps(fc, ["2026-12", "2027-01"], burst_ratio=2.0)
    assert out["month"].tolist() == ["2026-12", "2027-01"]
    assert out[["qps_p10", "qps_p50", "qps_p90"]].to_numpy().tolist() == [[32.0, 40.0, 52.0], [16.0, 20.0, 26.0]]
    assert out["hours"].tolist() == [744, 24]


def test_monthly_peak_qps_errors(flat_forecast):
    fc = flat_forecast("2026-12-01", 24, 10.0)
    with pytest.raises(ValueError, match="no hours in month 2027-01"):
        plan.monthly_peak_qps(fc, ["2027-01"], 1.5)
    with pytest.raises(ValueError, match="burst_ratio must be >= 1"):
        plan.monthly_peak_qps(fc, ["2026-12"], 0.5)


def test_size_by_month_is_the_sizing_stage_at_each_level(spec, measured):
    demand = pd.DataFrame({"month": ["2026-12"], "qps_p10": [20.0], "qps_p50": [30.0], "qps_p90": [45.0]})
    out = plan.size_by_month(demand, spec, measured).iloc[0]
    for level, qps in (("p10", 20.0), ("p50", 30.0), ("p90", 45.0)):
        direct = size_fleet(peak_qps=qps, latency_s=4.0, output_tokens_per_request=250.0,
                            input_tokens_per_request=800.0, kv_tokens_per_sequence=3000.0, spec=spec)
        assert out[f"gpus_{level}"] == direct.total_gpus
    assert out["gpus_p10"] <= out["gpus_p50"] <= out["gpus_p90"]
    assert out["binding"] in ("throughput", "memory")


def test_fleet_for_marks_the_load_measured(spec, measured):
    rows = {r["term"]: r["source"] for r in plan.fleet_for(30.0, spec, measured).rows()}
    assert rows["peak QPS"] == rows["latency per request"] == rows["KV tokens per sequence"] == "measured"
    assert rows["target utilisation"] == "assumed"


def test_fleet_by_month_is_validated(spec, measured, flat_forecast):
    fc = flat_forecast("2026-12-01", 24, 10.0)
    out = plan.fleet_by_month(fc, ["2026-12"], spec, measured)
    assert out.loc[0, "qps_p50"] == pytest.approx(15.0) and out.loc[0, "hours"] == 24
    with pytest.raises(pa.errors.SchemaError, match="ordered"):
        plan.MonthlyFleet.validate(out.assign(gpus_p10=out["gpus_p90"] + 1))


def test_size_months_carries_the_first_p50_fleet_and_its_latency_curve(spec, measured, flat_forecast):
    fc = flat_forecast("2026-12-01", 31 * 24 + 24, 10.0)
    sized = plan.size_months(fc, ["2026-12", "2027-01"], spec, measured)
    assert sized.months.equals(plan.fleet_by_month(fc, ["2026-12", "2027-01"], spec, measured))
    assert sized.first_p50.total_gpus == sized.months.loc[0, "gpus_p50"]
    assert sized.first_p50.peak_qps == pytest.approx(15.0)  # 1.5 burst x 10 QPS
    assert sized.latency.equals(latency_curve(sized.first_p50))
    assert sized.operating_latency_s >= measured.latency_s


def test_hourly_need_matches_the_stage_function(spec, measured, flat_forecast):
    fc = flat_forecast("2026-12-01", 31 * 24, 10.0)
    fc["mean"] = 10 + 5 * np.sin(np.arange(len(fc)) * 2 * np.pi / 24)  # a daily cycle
    fc["lo_80"], fc["hi_80"] = 0.8 * fc["mean"], 1.3 * fc["mean"]
    hours, need = plan.hourly_need_gpus(fc, ["2026-12"], spec, measured)
    assert len(hours) == 744 and set(need) == {"P10", "P50", "P90"}
    i = int(np.argmax(fc["mean"].to_numpy()))
    assert need["P50"][i] == plan.fleet_for(1.5 * fc["mean"].iloc[i], spec, measured).total_gpus
    assert np.all(need["P10"] <= need["P50"]) and np.all(need["P50"] <= need["P90"])
