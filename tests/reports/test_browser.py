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
        errors = [e for e in dt.events if e.get("method") == "Runtime.exceptionThrown"
                  or (e.get("method") == "Runtime.consoleAPICalled" and e["params"]["type"] in ("error", "assert"))
                  or (e.get("method") == "Log.entryAdded" and e["params"]["entry"]["level"] == "error")]
        return {"images": images, "headline": headline, "title": title, "errors": errors}


def inspect_in_chromium(page: Path, screenshot: Path, profile_dir: Path) -> dict:
    """Open ``page`` in headless Chromium; return its images, headline text, title and console errors."""
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
