"""The benchmark table: one row per measure, from the figures of one ``python -m bench`` run.

``python -m bench`` prints it after the per-module table and saves the run's figures to
``bench/last-run.json`` (``--docs`` also writes the table into docs/benchmarks.md);
``python -m bench.table [FILE]`` prints the table of a saved run and, with ``--docs``, writes
it into docs/benchmarks.md between the ``bench:begin`` / ``bench:end`` markers. The machine is named
from ``/proc/cpuinfo`` (or ``platform``), its core count and the load average at the end of
the run.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
from pathlib import Path
from typing import Any, Optional

ROOT = Path(__file__).resolve().parent.parent
LAST_RUN = Path(__file__).with_name("last-run.json")
PAGE = ROOT / "docs" / "benchmarks.md"
BEGIN, END = "<!-- bench:begin -->", "<!-- bench:end -->"

#: (measure, figure key, baseline key, ratio key, ratio's meaning, goal). Keys are
#: ``module.figure`` (module without its ``bench_`` prefix); a missing figure prints "not run".
ROWS: tuple = (
    ("`run_suite`, 2000 trials of a 50 ms async agent, concurrency 64", "flow.run_suite_s",
     "flow.run_suite_ideal_s", "flow.run_suite_vs_ideal", "x ideal", "<= 1.10x"),
    ("plain `asyncio.gather` of the same calls (the floor)", None, "flow.run_suite_ideal_s",
     "flow.asyncio_gather_vs_ideal", "x ideal", ""),
    ("`evaluate-agent` flow, 20,000 trials, concurrency 64, Prefect API up", "flow.flow_s",
     "flow.flow_ideal_s", "flow.flow_vs_ideal", "x ideal", "<= 1.25x"),
    ("  (the temporary Prefect server's start-up, apart)", "flow.prefect_server_start_s", None, None, "", ""),
    ("the same flow again, identical inputs (cache hit)", "flow.flow_cache_hit_s", "flow.flow_s",
     "flow.flow_cache_hit_vs_first", "x the first", "<= 0.10x"),
    ("bootstrap CI of cost per success (`bootstrap_ci`, ratio), 10k x 2000", "bootstrap.bootstrap_ci_s",
     "bootstrap.draw_indices_s", "bootstrap.bootstrap_ci_vs_draw_indices", "x drawing the indices",
     "< 0.2 s"),
    ("task-clustered bootstrap-t (`cluster_bootstrap_ratio`), 10k tasks x 2000",
     "bootstrap.cluster_bootstrap_ratio_s", "bootstrap.draw_indices_s",
     "bootstrap.cluster_bootstrap_ratio_vs_draw_indices", "x drawing the indices", "< 0.2 s"),
    ("`evaluate(..., TrajectoryMetric(\"in_order\"))`, 100k pairs of 10-step trajectories",
     "scoring.in_order_evaluate_s", "scoring.rapidfuzz_s", "scoring.in_order_evaluate_vs_rapidfuzz",
     "x rapidfuzz Levenshtein on names", "<= 5x"),
    ("  pairs where the batch differs from the single-pair score (1e-12)", "scoring.in_order_pairs_differing",
     None, None, "", "0"),
    ("`read_inspect_log` vs inspect_ai's `read_eval_log`, `.eval`", "ingest.inspect_eval_ingest_s",
     "ingest.inspect_eval_inspect_ai_s", "ingest.inspect_eval_ingest_vs_inspect_ai", "x inspect_ai",
     "<= 0.5x"),
    ("ingest Inspect `.json` vs `orjson.loads` of the same bytes", "ingest.inspect_json_ingest_s",
     "ingest.inspect_json_orjson_s", "ingest.inspect_json_ingest_vs_orjson", "x orjson", "<= 2.0x"),
    ("ingest Inspect `.eval` vs reading + `orjson.loads` of its members", "ingest.inspect_eval_ingest_s",
     "ingest.inspect_eval_orjson_s", "ingest.inspect_eval_ingest_vs_orjson", "x orjson", "<= 2.0x"),
    ("ingest tau-bench results vs `orjson.loads`", "ingest.tau_bench_ingest_s", "ingest.tau_bench_orjson_s",
     "ingest.tau_bench_ingest_vs_orjson", "x orjson", "<= 2.0x"),
    ("tool-call scoring per episode, 10k episodes, vs agentevals strict",
     "toolcalls.tool_call_call_per_episode_s", "toolcalls.agentevals_strict_s",
     "toolcalls.agentevals_strict_vs_ek", "x faster", ">= 10x"),
    ("  vs agentevals unordered", None, "toolcalls.agentevals_unordered_s",
     "toolcalls.agentevals_unordered_vs_ek", "x faster", ">= 10x"),
    ("  vs DeepEval `ToolCorrectnessMetric`", None, "toolcalls.deepeval_tool_correctness_s",
     "toolcalls.deepeval_tool_correctness_vs_ek", "x faster", ">= 10x"),
    ("`import ek_agents` vs `import prefect`", "flow.import_ek_agents_s", "flow.import_prefect_s",
     "flow.import_ek_agents_vs_prefect", "x", "keep"),
    ("  the same with every public name resolved", "flow.import_ek_agents_names_s", "flow.import_prefect_s",
     "flow.import_ek_agents_names_vs_prefect", "x", "keep"),
    ("`ek-agents audit RUN` (wall, whole command)", "cli.cli_audit_s", None, None, "", "< 2 s"),
    ("`ek-agents promote RUN --name N` (wall, whole command)", "cli.cli_promote_s", None, None, "", "< 2 s"),
    ("`ek-agents run`, shop suite k=4, no Prefect API, vs `run_suite` on the same", "cli.cli_run_s",
     "cli.run_suite_process_s", "cli.cli_run_vs_run_suite", "x run_suite in a process", "<= 5 s wall"),
    ("  the same with a Prefect API configured (the flow run recorded there)",
     "cli.cli_run_api_configured_s", None, None, "", "recorded"),
    ("`run_trials(capture=\"otel\")`, 2000 trials of the openai SDK under openai-v2, zero latency",
     "otel.capture_on_s", "otel.capture_off_s", "otel.capture_on_vs_off", "x without capture",
     "<= 1.10x"),
    ("  the same in process CPU time", None, None, "otel.capture_on_vs_off_cpu",
     "x without capture", ""),
    ("`episodes_from_otel`, 100k spans of OTLP/JSON (1,000 traces)", "otel.otlp_read_s", None,
     None, "", "bounded"),
)


def machine() -> str:
    name = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                name = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    load = ""
    if hasattr(os, "getloadavg"):
        load = f", load average {os.getloadavg()[0]:.1f} at the end of the run"
    return f"{name}, {os.cpu_count()} cores, Python {platform.python_version()}{load}"


def _fmt(key: Optional[str], figures: dict, unit: str = " s") -> str:
    if key is None:
        return ""
    v = figures.get(key)
    if v is None:
        skipped = {k: x for k, x in figures.items() if k.endswith("_skipped") and isinstance(x, str)}
        return "not run" if not skipped else "skipped"
    if isinstance(v, int) and not key.endswith("_s"):
        return str(v)
    return f"{v:.3g}{unit}"


def render(figures: dict, machine_name: Optional[str] = None) -> str:
    lines = [f"Measured on {machine_name or figures.get('machine') or machine()} -- one run of "
             "`make bench`; each ratio is against a baseline measured in the same run.", "",
             "| measure | figure | baseline | ratio | goal |", "|---|---|---|---|---|"]
    for label, fig, base, ratio, meaning, goal in ROWS:
        r = figures.get(ratio) if ratio else None
        rtxt = f"{r:.3g} {meaning}" if isinstance(r, (int, float)) else ("not run" if ratio else "")
        lines.append(f"| {label} | {_fmt(fig, figures)} | {_fmt(base, figures)} | {rtxt} | {goal} |")
    return "\n".join(lines) + "\n"


def write_page(table: str, path: Path = PAGE) -> None:
    text = path.read_text()
    if BEGIN not in text or END not in text:
        raise SystemExit(f"{path}: no {BEGIN} ... {END} markers to write the table between")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    path.write_text(f"{head}{BEGIN}\n{table}{END}{tail}")


def save(figures: dict, path: Path = LAST_RUN) -> None:
    path.write_text(json.dumps({"machine": machine(), **figures}, indent=1, sort_keys=True, default=str) + "\n")


def main(argv: Optional[list] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("file", nargs="?", default=str(LAST_RUN), help="a saved run (default bench/last-run.json)")
    ap.add_argument("--docs", action="store_true", help="write the table into docs/benchmarks.md")
    args = ap.parse_args(argv)
    figures: dict[str, Any] = json.loads(Path(args.file).read_text())
    table = render(figures)
    print(table, end="")
    if args.docs:
        write_page(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
