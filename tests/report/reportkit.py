"""Real stored runs for the report tests, and headless Chromium to look at the page.

``python -m tests.report.reportkit docs/report.png`` re-renders the README's screenshot from
the same runs the tests use.
"""
from __future__ import annotations

import dataclasses

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Optional

from ek_agents.records import baselines, documents, stagecache
from ek_agents.stages import evaluate as stages
from ek_agents.base import RunProvenance
from ek_agents.execution.harness import run_suite
from ek_agents.prices import load_prices
from ek_agents.records.manifest import RunInputs
from ek_agents.store import Store, run_key
from ek_agents.suite import load_suite

REPO = Path(__file__).resolve().parents[2]
#: (run id, agent name in examples.shop.agents, seed, scaffold): three agents, a nightly series
#: of the small one, and the large one again under another scaffold (not comparable).
RUNS = (("small-0", "small_agent", 0, "examples-shop-v1"),
        ("large-0", "large_agent", 0, "examples-shop-v1"),
        ("degraded-0", "degraded_agent", 0, "examples-shop-v1"),
        ("small-1", "small_agent", 1, "examples-shop-v1"),
        ("small-2", "small_agent", 2, "examples-shop-v1"),
        ("large-v2", "large_agent", 1, "examples-shop-v2"))
BASELINE = "shop-small"
GATED = "small-2"


def make_runs(root: str, *, k: int = 4) -> list[str]:
    """Run the shop agents with ``run_suite(persist=True)`` into ``root``; promote ``small-0``
    as baseline ``shop-small`` and gate ``small-2`` against it (``runs/small-2/gate.json``,
    as the pipeline's gate task writes it). Returns the run ids."""
    from examples.shop import agents
    from examples.shop.world import SUITE_PATH

    suite = load_suite(SUITE_PATH)
    prices = load_prices(REPO / "examples" / "prices.json")
    for run_id, name, seed, scaffold in RUNS:
        run_suite(getattr(agents, name), suite, k=k, seed=seed, persist=True, run_id=run_id,
                  rootdir=root, prices=prices, run=RunProvenance(seed=seed, scaffold=scaffold),
                  progress=False)
    st = Store(root)
    baselines.promote(st, "small-0", BASELINE)
    _record_gate(st, GATED, BASELINE)
    return [r[0] for r in RUNS]


def _record_gate(st: Store, run_id: str, baseline: str) -> None:
    """Gate a recorded run against ``baseline`` as the pipeline does: gate.json and the copy
    of the baseline written, then the manifest re-recorded listing them (a report reads only
    the documents its manifest lists)."""
    man = st.read_manifest(run_id)
    refs = {name: stagecache.StageRef(stage=name, key=run_key(run_id, name),
                                  sha256=man["artifacts"][run_key(run_id, name)])
            for name in ("tasks", "prices", "episodes", "graded", "metrics", "report")
            if run_key(run_id, name) in man["artifacts"]}
    ep = (man.get("stages") or {}).get("episodes") or {}
    if "reused" in ep:  # what the run reused stays recorded
        refs["episodes"] = dataclasses.replace(refs["episodes"], reused=ep["reused"],
                                               reused_from=ep.get("reused_from"))
    refs["gate"] = stages.run_gate(st, run_id, refs["report"], baseline, tolerance=0.0,
                                   cost_tolerance=0.0)
    documents.record_run(st, run_id, refs=refs, inputs=RunInputs.from_dict(man["inputs"]),
                      agent=man["agent"], parameters=man["parameters"],
                      orchestrator=man["orchestrator"])


def chromium_binary() -> Optional[str]:
    """Debian's ``chromium`` (what ``.ci/run`` installs), else any chromium on PATH."""
    for name in ("/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


def chromium_or_skip() -> str:
    """The chromium binary for a test module of pages: the module is skipped when none is
    installed, except under CI (``.ci/run`` installs it: there a missing one is an error)."""
    import pytest

    binary = chromium_binary()
    if binary is None:
        if os.environ.get("CI") or os.environ.get("EK_REQUIRE_CHROMIUM"):  # .ci/run: never skip
            raise RuntimeError("chromium is not installed: .ci/run installs it (apt-get install chromium)")
        pytest.skip("chromium is not installed (apt-get install chromium); .ci/run installs it in CI",
                    allow_module_level=True)
    return binary


class DevToolsPage:
    """One page of a headless Chromium driven through the DevTools protocol: what it loaded
    (``requests``: the URL of every request the page made, from ``Network.requestWillBeSent``
    -- the page's own, not the browser's background traffic; ``blocked``: ``(url, reason)`` of
    those the browser refused to send, e.g. by the page's CSP), its DOM and a screenshot of a
    ``width`` x ``height`` viewport."""

    def __init__(self, binary: str, profile: str, *, width: int = 1240, height: int = 1300) -> None:
        self.proc = subprocess.Popen(
            [binary, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars",
             "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0",
             f"--window-size={width},{height}", f"--user-data-dir={profile}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.requests: list[str] = []
        self.blocked: list[tuple[str, str]] = []
        self._ids: dict[str, str] = {}
        self._id = 0
        try:
            self._connect(Path(profile) / "DevToolsActivePort")
            self.send("Emulation.setDeviceMetricsOverride", width=width, height=height,
                      deviceScaleFactor=1, mobile=False)
        except BaseException:
            self.close()
            raise

    def _connect(self, port_file: Path) -> None:
        import json
        import time
        import urllib.request

        from websockets.sync.client import connect

        deadline = time.monotonic() + 60
        while not (port_file.exists() and port_file.read_text().strip()):
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise RuntimeError(f"chromium did not open a DevTools port (exit {self.proc.poll()})")
            time.sleep(0.1)
        port = int(port_file.read_text().split()[0])
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=30) as resp:
            target = next(t for t in json.load(resp) if t["type"] == "page")
        self.ws = connect(target["webSocketDebuggerUrl"], max_size=None, open_timeout=30)
        self.send("Network.enable")
        self.send("Page.enable")

    def send(self, method: str, **params: object) -> dict:
        """Call ``method``; record the page's requests among the events that come first."""
        import json

        self._id += 1
        self.ws.send(json.dumps({"id": self._id, "method": method, "params": params}))
        while True:
            msg = self._event(json.loads(self.ws.recv(timeout=60)))
            if msg.get("id") == self._id:
                if "error" in msg:
                    raise RuntimeError(f"DevTools {method}: {msg['error']}")
                return msg.get("result") or {}

    def _event(self, msg: dict) -> dict:
        """Record a request the page made (and whether the browser blocked it)."""
        params = msg.get("params") or {}
        if msg.get("method") == "Network.requestWillBeSent":
            self._ids[params["requestId"]] = params["request"]["url"]
            self.requests.append(params["request"]["url"])
        elif msg.get("method") == "Network.loadingFailed" and params.get("blockedReason"):
            url = self._ids.get(params["requestId"], "?")
            self.blocked.append((url, params["blockedReason"]))
            if url in self.requests:
                self.requests.remove(url)  # never sent: not a request the network saw
        return msg

    def open(self, url: str) -> None:
        """Navigate to ``url`` and wait for its load event (and the requests it caused)."""
        import json

        self.send("Page.navigate", url=url)
        while True:
            msg = self._event(json.loads(self.ws.recv(timeout=60)))
            if msg.get("method") == "Page.loadEventFired":
                break
        self.send("Runtime.evaluate", expression="new Promise(r => setTimeout(r, 300))",
                  awaitPromise=True)  # late requests (none expected) are recorded meanwhile

    def dom(self) -> str:
        return self.send("Runtime.evaluate", expression="document.documentElement.outerHTML",
                         returnByValue=True)["result"]["value"]

    def screenshot(self) -> bytes:
        import base64

        return base64.b64decode(self.send("Page.captureScreenshot", format="png")["data"])

    def close(self) -> None:
        ws = getattr(self, "ws", None)
        if ws is not None:
            ws.close()
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)


def main(out: str) -> int:  # pragma: no cover - regenerates docs/report.png by hand
    import tempfile

    from ek_agents.report.htmlreport import write_report

    binary = chromium_binary()
    if binary is None:
        print("no chromium on PATH: apt-get install chromium", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        ids = make_runs(os.path.join(tmp, "store"))
        html = os.path.join(tmp, "report.html")
        write_report(os.path.join(tmp, "store"), ids, html=html)
        page = DevToolsPage(binary, os.path.join(tmp, "profile"))
        try:
            page.open(Path(html).as_uri())
            Path(out).write_bytes(page.screenshot())
        finally:
            page.close()
        print(f"wrote {out}")
        return 0

if __name__ == "__main__":  # pragma: no cover
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else str(REPO / "docs" / "report.png")))
