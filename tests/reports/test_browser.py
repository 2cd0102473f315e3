"""The HTML report in headless Chromium: every image decodes, no console error, the headline reads right.

Talks to Chromium over the DevTools protocol (``websockets``, installed with
Prefect): console messages, exceptions and log entries are collected while the
page loads, each ``<img>``'s ``naturalWidth`` is read, and a screenshot is saved
beside the report (``screenshot.png``) for a person to look at.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import re
import shutil
import signal
import subprocess
from pathlib import Path

import pandas as pd
import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(180)]

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--disable-dev-shm-usage", "--remote-debugging-port=0", "--window-size=1200,1600")


class DevTools:
    """A minimal DevTools-protocol session on one page (flattened target session)."""

    def __init__(self, ws) -> None:
        self.ws, self.next_id, self.session, self.events = ws, 0, None, []

    async def call(self, method: str, **params):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params}
        if self.session and not method.startswith("Target."):
            msg["sessionId"] = self.session
        await self.ws.send(json.dumps(msg))
        while True:
            reply = json.loads(await self.ws.recv())
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    async def wait_for(self, method: str, timeout_s: float = 30.0) -> dict:
        for event in self.events:
            if event.get("method") == method:
                return event
        async with asyncio.timeout(timeout_s):
            while True:
                event = json.loads(await self.ws.recv())
                self.events.append(event)
                if event.get("method") == method:
                    return event


#: Window widths every report page must fit without sideways scrolling of the page itself. [px]
PAGE_WIDTHS_PX = (1300, 800)
_OVERFLOW_JS = """(() => {
  const width = document.documentElement.clientWidth;
  const wide = Array.from(document.querySelectorAll('body *'))
    .filter(e => e.getBoundingClientRect().right > width + 1 && !e.closest('.wide'))
    .map(e => e.tagName + (e.id ? '#' + e.id : '') + ' ' + (e.textContent || '').trim().slice(0, 40));
  return {scroll_width: document.documentElement.scrollWidth, client_width: width, wide: wide.slice(0, 10)};
})()"""


async def _inspect(ws_url: str, page: Path, screenshot: Path) -> dict:
    import websockets

    async with websockets.connect(ws_url, max_size=64 * 2**20) as ws:
        dt = DevTools(ws)
        target = await dt.call("Target.createTarget", url="about:blank")
        dt.session = (await dt.call("Target.attachToTarget", targetId=target["targetId"], flatten=True))["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            await dt.call(f"{domain}.enable")
        await dt.call("Page.navigate", url=page.as_uri())
        await dt.wait_for("Page.loadEventFired")
        images = (await dt.call("Runtime.evaluate", returnByValue=True, expression=(
            "Array.from(document.images).map(i => ({alt: i.alt, complete: i.complete, width: i.naturalWidth}))"
        )))["result"]["value"]
        headline = (await dt.call("Runtime.evaluate", returnByValue=True,
                                  expression="document.querySelector('#headline').innerText"))["result"]["value"]
        title = (await dt.call("Runtime.evaluate", returnByValue=True, expression="document.title"))["result"]["value"]
        shot = await dt.call("Page.captureScreenshot", format="png")
        screenshot.write_bytes(base64.b64decode(shot["data"]))
        widths = {}
        for width in PAGE_WIDTHS_PX:  # lay the page out at each window width; keep a screenshot of each
            await dt.call("Emulation.setDeviceMetricsOverride", width=width, height=2600, deviceScaleFactor=1,
                          mobile=False)
            widths[width] = (await dt.call("Runtime.evaluate", returnByValue=True,
                                           expression=_OVERFLOW_JS))["result"]["value"]
            shot = await dt.call("Page.captureScreenshot", format="png")
            screenshot.with_name(f"{screenshot.stem}-{width}px.png").write_bytes(base64.b64decode(shot["data"]))
        errors = [e for e in dt.events if e.get("method") == "Runtime.exceptionThrown"
                  or (e.get("method") == "Runtime.consoleAPICalled" and e["params"]["type"] in ("error", "assert"))
                  or (e.get("method") == "Log.entryAdded" and e["params"]["entry"]["level"] == "error")]
        return {"images": images, "headline": headline, "title": title, "errors": errors, "widths": widths}


def inspect_in_chromium(page: Path, screenshot: Path, profile_dir: Path) -> dict:
    """Open ``page`` in headless Chromium; return its images, headline text, title, console errors and, per
    width in :data:`PAGE_WIDTHS_PX`, the page's scroll and client widths and the elements sticking out."""
    proc = subprocess.Popen([CHROMIUM, *CHROMIUM_FLAGS, f"--user-data-dir={profile_dir}", "about:blank"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)  # its own group, so stopping it stops its helpers
    try:
        ws_url = None
        for line in proc.stderr:  # Chromium prints the DevTools endpoint once it listens
            if m := re.search(r"DevTools listening on (ws://\S+)", line):
                ws_url = m.group(1)
                break
        assert ws_url, "Chromium did not print its DevTools endpoint"
        return asyncio.run(_inspect(ws_url, page, screenshot))
    finally:
        for sig, wait_s in ((signal.SIGTERM, 5), (signal.SIGKILL, 5)):
            try:
                os.killpg(proc.pid, sig)
                proc.wait(wait_s)
                break
            except (ProcessLookupError, subprocess.TimeoutExpired):
                continue


@pytest.mark.skipif(CHROMIUM is None, reason="needs Chromium (Debian package 'chromium'; .ci/run installs it)")
def test_report_html_renders_in_chromium_without_errors(planned_report, tmp_path: Path):
    folder, _ = planned_report
    result = inspect_in_chromium(folder / "report.html", folder / "screenshot.png", tmp_path / "chromium-profile")
    assert result["errors"] == []
    charts = list((folder / "charts").glob("*.png"))
    assert len(result["images"]) == len(charts) >= 8
    broken = [img["alt"] for img in result["images"] if not img["complete"] or img["width"] == 0]
    assert broken == []
    budget = pd.read_csv(folder / "budget.csv")
    text = result["headline"]
    for _, row in budget.iterrows():  # every pool's row and the fleet's total rows
        assert (f"{row['Pool']}\t{row['Month']}\t{row['GPU type']}\t{row['GPUs P50']}\t{row['GPUs P90']}\t"
                f"{row['Total cost [USD]']:,.0f}") in text
    first = budget[budget["Pool"] != "total"].groupby("Pool").first()  # each pool's first month
    hours = [pd.Period(m).days_in_month * 24 for m in first["Month"]]
    per_pool = int(round(sum(first["GPU-hours reserved [GPU-h]"] / hours)))
    # no [[pools]] in the test config: every pool is on [sizing].gpu, so the shared count is at most the per-pool sum
    shared = int(re.search(r"Recommended reserved commitment: (\d+) ", text).group(1))
    assert 0 < shared <= per_pool
    assert result["title"].startswith(f"Capacity plan {folder.name}")
    assert (folder / "screenshot.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _assert_fits(result: dict) -> None:
    for width, layout in result["widths"].items():
        assert layout["client_width"] <= width
        assert layout["scroll_width"] <= layout["client_width"], (width, layout)
        assert layout["wide"] == [], (width, layout)


def _wide_report():
    """A report with every kind of wide content: a 14-column table, a long unbroken name, a long list value."""
    from capplan.reports import charts
    from capplan.reports.document import Chart, PlanReport, Table

    months = ["2026-12", "2027-01"]
    headline = pd.DataFrame({"pool": ["chat"] * 2, "month": months, "gpu_type": ["H100-SXM-80GB"] * 2, "gpus_p50": [4, 5], "gpus_p90": [5, 7], "cost_usd_p50": [9e3, 1.1e4],
                             "cost_usd_p90": [1.1e4, 1.5e4], "binding": ["throughput", "memory"]})
    budget = pd.DataFrame({"month": months, "pool": ["chat"] * 2, "gpu_type": ["H100-SXM-80GB"] * 2,
                           "gpus_p50": [4, 5], "gpus_p90": [5, 7]})
    for option in ("reserved", "on_demand", "spot"):
        budget[f"gpu_hours_{option}"] = 2232.0
        budget[f"cost_usd_{option}"] = 4000.0
    budget = budget.assign(total_cost_usd=12e3, total_cost_usd_p10=11e3, total_cost_usd_p90=13e3)
    listed = ", ".join(f"tenant-batch-model-{i:03d}" for i in range(30))
    assumptions = pd.DataFrame({"name": ["cost.interruptible_models"], "value": [listed], "unit": ["-"],
                                "source": ["assumed"]})
    drift = pd.DataFrame({f"column_number_{i}_usd": [123456.789, 0.5] for i in range(14)})
    drift.insert(0, "model", ["a-very-long-model-name-without-spaces-llama-3.1-405b-instruct-fp8-" * 2, "m"])
    png = charts.chart_png(charts.plot_hockey_stick, pd.DataFrame({"utilisation": [0.1, 0.9], "latency_s": [1.0, 9.0]}),
                           0.6, 2.0)
    return PlanReport(month="2026-12", generated_at_utc="2026-12-01 06:00", gpu_type="H100-SXM-80GB", model_name="m",
                      headline=headline, recommended_reserved_gpus=3, budget=budget, assumptions=assumptions,
                      charts=[Chart("h", "Latency", "c", png)], tables=[Table("Drift findings", drift)],
                      notes=["quarantined: /data/" + "x" * 300])


@pytest.mark.skipif(CHROMIUM is None, reason="needs Chromium (Debian package 'chromium'; .ci/run installs it)")
def test_wide_tables_scroll_in_their_box_at_1300_and_800_pixels(tmp_path: Path):
    """Tables scroll inside their box or wrap: the page itself never scrolls sideways (issue 20)."""
    from capplan.reports.render import render_html

    page = tmp_path / "report.html"
    page.write_text(render_html(_wide_report()), encoding="utf-8")
    _assert_fits(inspect_in_chromium(page, tmp_path / "wide.png", tmp_path / "chromium-profile"))


@pytest.mark.skipif(CHROMIUM is None, reason="needs Chromium (Debian package 'chromium'; .ci/run installs it)")
def test_sample_report_fits_1300_and_800_pixel_windows(planned_report, tmp_path: Path):
    folder, _ = planned_report
    _assert_fits(inspect_in_chromium(folder / "report.html", tmp_path / "fit.png", tmp_path / "chromium-profile"))


@pytest.mark.skipif(CHROMIUM is None, reason="needs Chromium (Debian package 'chromium'; .ci/run installs it)")
def test_earlier_plans_chart_decodes_and_fits_1300_and_800_pixels(variance, tmp_path: Path):
    """The "How earlier plans did" section with its table and chart (pools and the fleet, a partial month)."""
    from dataclasses import replace

    from capplan.history.compare import EarlierPlans
    from capplan.reports.assemble import earlier_plans_table
    from capplan.reports.render import write_report

    report = replace(_wide_report(), tables=[earlier_plans_table(EarlierPlans(variance))])
    folder = write_report(report, tmp_path / "out", {})
    result = inspect_in_chromium(folder / "report.html", folder / "screenshot.png", tmp_path / "chromium-profile")
    assert result["errors"] == []
    assert [(i["alt"], i["complete"], i["width"] > 0) for i in result["images"]] == [
        ("Latency", True, True), ("Earlier plans against what happened", True, True)]
    _assert_fits(result)
