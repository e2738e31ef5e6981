"""The trial browser and the export at size: ``python -m bench.bench_browser``.

1. A report of 20,000 trials (5,000 tasks x k=4 of a seeded agent with three tool calls and a
   priced model call per trial, ~30% failing: more failing trials than a table keeps, the
   largest page the bounds allow): the HTML file's size, and in headless Chromium the time
   from navigation to the browser's first table drawn (``performance.mark("ek-trials-ready")``)
   and to the load event.
2. The export of a run made as bench-scale makes its run (``evaluate-at-scale``'s library
   steps ``plan_scale`` / ``run_scale_chunk`` / ``finish_scale`` in this process, bench-scale's
   zero-latency agent, k = 100, segments, report streamed): wall and peak RSS of the export in a
   process of its own, against the peak RSS of a process that only imports what the export
   imports (the baseline measured in the same run). Default 100,000 trials;
   ``--export-trials 1000000`` is bench-scale's run.

Options: ``--trials N`` (report), ``--export-trials N`` (0: no export), ``--no-chromium``.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODEL = "gpt-4o-mini-2024-07-18"


def _agent(task, *, seed=0):
    from ek_agents.base import Cost, Episode, ModelCall, Step, Trajectory

    n = int(task.task_id[1:])
    ok = (n * 7 + seed) % 10 >= 3
    steps = (Step("find_customer", {"email": f"user{n}@example.com"}, observation={"id": f"C{n}"}),
             Step("list_orders", {"customer_id": f"C{n}"}, observation=[{"id": f"O{n}", "total": n / 7}]),
             Step("refund_order", {"order_id": f"O{n}", "amount": 10.0},
                  observation=None if ok else None, error=None if ok else "amount exceeds the total"))
    calls = [ModelCall(MODEL, input_tokens=1200 + n % 300, cached_input_tokens=1024,
                       output_tokens=40 + n % 20) for _ in range(3)]
    return Episode(task.task_id, output=task.gold if ok else f"refunded O{n}", trajectory=Trajectory(steps),
                   cost=Cost.of_calls(calls))


def make_run(store: str, run_id: str, n_tasks: int, k: int, agent) -> float:
    from ek_agents.base import TaskSpec
    from ek_agents.prices import load_prices
    from ek_agents.execution.harness import run_suite

    tasks = [TaskSpec(f"t{i:06d}", input=f"q{i}", gold=f"g{i}", slice=f"s{i % 5}") for i in range(n_tasks)]
    t0 = time.perf_counter()
    run_suite(agent, tasks, k=k, seed=1, persist=True, run_id=run_id, rootdir=store,
              prices=load_prices(ROOT / "examples" / "prices.json"), progress=False)
    return time.perf_counter() - t0


def report_figures(tmp: Path, trials: int, chromium: bool) -> dict:
    from ek_agents.report.htmlreport import write_report

    store = str(tmp / "store")
    made = make_run(store, "browse", trials // 4, 4, _agent)
    page = tmp / "report.html"
    t0 = time.perf_counter()
    write_report(store, ["browse"], html=str(page))
    out = {"report_trials": trials, "make_run_s": made, "write_report_s": time.perf_counter() - t0,
           "report_mb": page.stat().st_size / 1e6}
    if chromium:
        sys.path.insert(0, str(ROOT))
        from tests.report.reportkit import DevToolsPage, chromium_binary

        binary = chromium_binary()
        if binary is None:
            out["first_render"] = "not measured: no chromium (apt-get install chromium)"
            return out
        b = DevToolsPage(binary, str(tmp / "profile"))
        try:
            t0 = time.perf_counter()
            b.open(page.as_uri())
            ev = lambda x: b.send("Runtime.evaluate", expression=x, returnByValue=True)["result"].get("value")  # noqa: E731
            out["open_wall_s"] = time.perf_counter() - t0  # to the load event, + the helper's 0.3 s wait
            out["first_render_s"] = ev("performance.getEntriesByName('ek-trials-ready')[0].startTime") / 1000
            out["load_event_s"] = ev("performance.getEntriesByType('navigation')[0].loadEventEnd") / 1000
            out["rows_drawn"] = ev("document.querySelectorAll('tr.trial-row').length")
            out["trials_in_table"] = ev("JSON.parse(document.getElementById('ek-trials').textContent).runs[0].trials.length")
        finally:
            b.close()
    return out


# peak RSS as VmHWM of the child's own address space (ru_maxrss would carry over the parent's
# high-water mark across exec: the parent holds the run it just made)
CHILD = r"""
import json, sys, time
mode, out, store = sys.argv[1:4]
import ek_agents.report.export as ex, pyarrow.parquet  # what the export imports
t0 = time.perf_counter()
if mode == "export":
    rec = ex.export_runs(["big"], out, fmt="parquet", store=store)
    rows = {k: v.rows for k, v in rec.files.items()}
else:
    rows = {}
hwm = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM:"))
print(json.dumps({"s": time.perf_counter() - t0, "rss_mb": hwm / 1024, "rows": rows}))
"""


def make_scale_run(store: str, run_id: str, trials: int, k: int = 100) -> float:
    """bench-scale's run of ``trials`` trials (``trials // k`` tasks), without Prefect."""
    from ek_agents.base import RunProvenance
    from ek_agents.stages import evaluate as stages
    from ek_agents.pipeline.chunks import TrialRequest
    from ek_agents.pipeline.scalerun import finish_scale, plan_scale, run_scale_chunk
    from ek_agents.store import Store

    from bench.scale import AGENT, SEED, write_suite

    st = Store(store)
    suite = write_suite(Path(store).parent / "suite.jsonl", trials // k)
    t0 = time.perf_counter()
    tasks = stages.record_suite(st, run_id, suite)
    request = TrialRequest(store=st.url, run_id=run_id, tasks=tasks, agent=AGENT, agent_id=None,
                           k=k, seed=SEED, run=RunProvenance(seed=SEED, suite_version=tasks.version).to_dict(),
                           chunk_size=None, max_concurrency=8, parallel_chunks=1, timeout_s=None,
                           retries=0, refresh=False, check=None)
    plan = plan_scale(request, None)
    finish_scale(plan, None, [run_scale_chunk(c) for c in plan.chunks])
    return time.perf_counter() - t0


def export_figures(tmp: Path, trials: int) -> dict:
    store = str(tmp / "store")
    made = make_scale_run(store, "big", trials)
    res = {}
    for mode in ("imports", "export"):
        os.sync()
        p = subprocess.run([sys.executable, "-c", CHILD, mode, str(tmp / "export"), store], cwd=ROOT,
                           capture_output=True, text=True, check=True)
        res[mode] = json.loads(p.stdout.strip().splitlines()[-1])
    size = sum(f.stat().st_size for f in (tmp / "export").iterdir()) / 1e6
    return {"export_trials": trials, "export_make_run_s": made, "export_s": res["export"]["s"],
            "export_peak_rss_mb": res["export"]["rss_mb"], "imports_peak_rss_mb": res["imports"]["rss_mb"],
            "export_rows": res["export"]["rows"], "export_mb": size,
            "export_us_per_trial": res["export"]["s"] / trials * 1e6}


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(prog="python -m bench.bench_browser")
    ap.add_argument("--trials", type=int, default=20_000)
    ap.add_argument("--export-trials", type=int, default=100_000)
    ap.add_argument("--no-chromium", action="store_true")
    a = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        fig = report_figures(Path(tmp) / "r", a.trials, not a.no_chromium)
    print(f"report of {fig['report_trials']:,} trials: {fig['report_mb']:.1f} MB, written in "
          f"{fig['write_report_s']:.1f} s (the run made in {fig['make_run_s']:.1f} s)")
    if "first_render_s" in fig:
        print(f"  headless Chromium: browser's first table drawn {fig['first_render_s']:.2f} s after "
              f"navigation, load event {fig['load_event_s']:.2f} s; {fig['rows_drawn']} rows drawn of "
              f"{fig['trials_in_table']:,} in the table")
    else:
        print(f"  first render: {fig.get('first_render', 'not measured (--no-chromium)')}")
    if a.export_trials <= 0:  # --export-trials 0: the report only
        return {k: v for k, v in fig.items() if isinstance(v, (int, float))}
    with tempfile.TemporaryDirectory() as tmp:
        ex = export_figures(Path(tmp), a.export_trials)
    print(f"export of {ex['export_trials']:,} trials (bench-scale's layout; made in "
          f"{ex['export_make_run_s']:.1f} s): {ex['export_s']:.2f} s wall "
          f"({ex['export_us_per_trial']:.1f} us/trial), peak RSS {ex['export_peak_rss_mb']:.0f} MB "
          f"(imports alone {ex['imports_peak_rss_mb']:.0f} MB; goal <= 1024); "
          f"{ex['export_mb']:.1f} MB of Parquet, rows {ex['export_rows']}")
    if a.export_trials < 1_000_000:
        print("  the 1,000,000-trial export (bench-scale's run): not measured here "
              "(--export-trials 1000000 makes and exports one)")
    fig.update(ex)
    return {k: v for k, v in fig.items() if isinstance(v, (int, float))}


if __name__ == "__main__":
    main()
