"""The demo: two agents on the shop world, a baseline, a gate that passes and one that fails,
and an audit -- every step a flow run, every artifact in the store -- and the HTML report
comparing its runs (``reports/demo.html`` in the store; the path is printed last)."""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Optional

from ek_agents.records import manifest as _manifest
import ek_agents_examples
from ek_agents.records import documents
from ek_agents.errors import CheckFailed
from ek_agents.execution.harness import new_run_id
from ek_agents.report.htmlreport import REPORT_FILE, render_html
from ek_agents.report.runsummary import load_runs
from ek_agents.store import Store, baseline_key, report_key, run_file_key, run_key

from ek_agents_examples.shop.world import SUITE_PATH
from ek_agents_examples.otel.fakeopenai import FakeOpenAI

from .local import call_flow

AGENTS = {"small": "ek_agents_examples.shop.agents:small_agent",
          "large": "ek_agents_examples.shop.agents:large_agent",
          "degraded": "ek_agents_examples.shop.agents:degraded_agent"}
BASELINE = "shop-small"


def run_demo(store: str, *, k: int = 4, say: Callable[[str], None] = print) -> dict:
    """Run the demo into ``store``; return ``{step: run_id}``."""
    st = Store(store)
    common = dict(suite=str(SUITE_PATH), k=k, store=st.url,
                  prices=str(Path(ek_agents_examples.__file__).parent / "prices.json"))
    runs: dict = {}

    def evaluate(step: str, agent: str, seed: int, **extra) -> None:
        runs[step] = f"{step}-{new_run_id()}"
        say(f"\n== {step}: {AGENTS[agent]}, k={k}, seed {seed}"
            + (f", gate vs baseline {extra['baseline']!r}" if extra.get("baseline") else ""))
        try:
            call_flow("evaluate_agent", agent=AGENTS[agent], seed=seed, run_id=runs[step],
                      **common, **extra)
            failed = None
        except CheckFailed as exc:
            failed = exc
        say(_manifest.report_markdown(*documents.run_report(st, runs[step])))
        if failed is not None:
            say(f"-> {type(failed).__name__}: the run is recorded and the flow run failed "
                "(`ek-agents run` exits 1)")

    evaluate("small", "small", seed=1)
    evaluate("large", "large", seed=1)
    call_flow("promote_baseline", run_id=runs["small"], name=BASELINE, store=st.url,
              replace=True)  # a second demo into the same store replaces it, keeping the old one
    say(f"\n== promoted run {runs['small']} to baseline {BASELINE!r} ({baseline_key(BASELINE)})")
    evaluate("small-again", "small", seed=2, baseline=BASELINE)
    evaluate("degraded", "degraded", seed=2, baseline=BASELINE)
    result = call_flow("audit_run", baseline=BASELINE, store=st.url)
    say(f"\n== audit of baseline {BASELINE!r}: {len(result['checked'])} checks, "
        f"{'passed' if result['passed'] else 'FAILED'}")
    pattern = run_key(runs["small"], "manifest").replace(runs["small"], "<run_id>")
    say(f"\nmanifests: {st.url}/{pattern} for " + ", ".join(runs.values()))
    say(f"each run's HTML report: {st.url}/{run_file_key('ID', REPORT_FILE).replace('ID', '<run_id>')}")
    traced = traced_agent(st, k=min(k, 3), say=say, prices=common["prices"])
    if traced is not None:
        runs["traced"] = traced
    key = report_key("demo")
    st.write_bytes(key, render_html(load_runs(st, list(runs.values()))).encode("utf-8"))
    say(f"\nHTML report comparing the demo's runs (open it in a browser): {st.url}/{key}")
    return runs


def traced_agent(st: Store, *, k: int, say: Callable[[str], None], prices: str) -> Optional[str]:
    """An OpenAI Agents SDK agent (gpt-4o planner + gpt-4o-mini summariser, traced by
    OpenInference) against the local scripted OpenAI-compatible server, evaluated from its
    spans alone (``capture="otel"``): its tool calls, and its dollars billed per model call.
    Skipped (None, said so) when the example's packages are not installed."""
    try:  # the SDKs of the example, imported only for this step
        from ek_agents_examples.otel import agents as traced
        from ek_agents_examples.otel.demo import SUITE_PATH as TRACED_SUITE
    except ImportError as exc:
        say(f"\n== traced agent skipped ({exc}): pip install 'ek-agents[examples]'")
        return None

    run_id = f"traced-{new_run_id()}"
    agent = "ek_agents_examples.otel.demo:agent"
    with FakeOpenAI() as server:
        traced.configure(server.base_url)
        say(f"\n== traced: {agent} (OpenAI Agents SDK + OpenInference) against the local "
            f"OpenAI-compatible server {server.base_url}, k={k}, capture='otel'")
        call_flow("evaluate_agent", agent=agent, suite=str(TRACED_SUITE), k=k, seed=1,
                  run_id=run_id, store=st.url, prices=prices, check="output", capture="otel")
    say(_manifest.report_markdown(*documents.run_report(st, run_id)))
    return run_id
