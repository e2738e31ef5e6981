"""Real stored runs for the report tests, and headless Chromium to look at the page.

``python -m tests.report.reportkit docs/report.png`` re-renders the README's screenshot from
the same runs the tests use.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Optional

from ek_agents import stages
from ek_agents.base import RunProvenance
from ek_agents.harness import run_suite
from ek_agents.prices import load_prices
from ek_agents.store import Store
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
    stages.promote(st, "small-0", BASELINE)
    stages.write_doc(st, GATED, "gate", stages.gate_run(st, GATED, BASELINE))
    return [r[0] for r in RUNS]


def chromium_binary() -> Optional[str]:
    """Debian's ``chromium`` (what ``.ci/run`` installs), else any chromium on PATH."""
    for name in ("/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


def chromium(binary: str, url: str, profile: str, *args: str, proxy: Optional[str] = None,
             timeout: float = 120) -> subprocess.CompletedProcess:
    """Run headless Chromium once on ``url`` with no background traffic of its own; with
    ``proxy`` every request the page makes goes to that host:port."""
    cmd = [binary, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
           "--disable-component-update", "--disable-sync", "--no-first-run",
           "--disable-default-apps", "--disable-extensions", "--hide-scrollbars",
           f"--user-data-dir={profile}", *args]
    if proxy:
        cmd += [f"--proxy-server=http://{proxy}", "--proxy-bypass-list=<-loopback>"]
    return subprocess.run(cmd + [url], capture_output=True, text=True, timeout=timeout)


def main(out: str) -> int:  # pragma: no cover - regenerates docs/report.png by hand
    import tempfile

    from ek_agents.htmlreport import write_report

    binary = chromium_binary()
    if binary is None:
        print("no chromium on PATH: apt-get install chromium", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        ids = make_runs(os.path.join(tmp, "store"))
        html = os.path.join(tmp, "report.html")
        write_report(os.path.join(tmp, "store"), ids, html=html)
        res = chromium(binary, Path(html).as_uri(), os.path.join(tmp, "profile"),
                       f"--screenshot={os.path.abspath(out)}", "--window-size=1100,1250")
        print(res.stderr[-300:] if res.returncode else f"wrote {out}")
        return res.returncode


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else str(REPO / "docs" / "report.png")))
