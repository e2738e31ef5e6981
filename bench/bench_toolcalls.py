"""Benchmark: tool-call scoring per episode vs agentevals' trajectory match (strict / unordered)
and DeepEval's ToolCorrectnessMetric, on the same 10k ten-step episodes.

Run: ``.venv/bin/python -m bench.bench_toolcalls [--n 10000]``. agentevals and DeepEval pull in
LangChain / an LLM client stack that ek-agents does not need, so they run in another Python:
``EK_BENCH_COMPARE_PYTHON=/tmp/cmp-venv/bin/python`` (made with ``python -m venv /tmp/cmp-venv
&& /tmp/cmp-venv/bin/pip install agentevals deepeval``); without it, or without one of the
packages there, that row says it is skipped and why. Ratios ``<tool>_vs_ek`` are how many times
faster ek-agents is (their seconds / ours); ek-agents is timed as a ``score()`` per episode
(``tool_call_call_per_episode_s``: the first pass of a **new** metric over the episodes, min of
``--repeat`` new metrics -- a metric keeps the classes of the calls it has seen, so a second
pass over the same episodes would time a warm cache no user scoring a run once would have;
``..._warm_s`` is that second pass, reported apart) and through ``score_batch`` (what
``evaluate`` uses). DeepEval's metric is built with a
model that refuses to be called: only its deterministic name/argument match is measured.

With plain arguments (``str``/``int``/``float``/``bool``/``None`` values) ``score`` classifies
an episode's calls in C (``ek_agents.scoring.callcodes.CallTable``) and pairs them on per-class exact
keys there; only calls left over go through the prepared views and the assignment
(bench/PROFILE-scoring.md, the tool-call section, has where the time goes).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.bench_scoring import _timed, make_episodes
from ek_agents.scoring.toolcalls import ToolCallMetric

COMPARE = Path(__file__).with_name("compare_toolcall_tools.py")
TOOLS = ("agentevals_strict", "agentevals_unordered", "deepeval_tool_correctness")


def compare(preds: list, golds: list, python: str | None, repeat: int) -> dict:
    """``{tool: seconds | 'skipped: why'}`` from :mod:`bench.compare_toolcall_tools` run by ``python``."""
    if not python:
        why = "skipped: set EK_BENCH_COMPARE_PYTHON to a Python with agentevals and deepeval installed"
        return {t: why for t in TOOLS}
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "episodes.json"
        path.write_text(json.dumps({"preds": preds, "golds": golds, "repeat": repeat}))
        env = {**os.environ, "DEEPEVAL_TELEMETRY_OPT_OUT": "YES", "DO_NOT_TRACK": "1"}
        proc = subprocess.run([python, str(COMPARE), str(path)], capture_output=True, text=True, env=env)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode or not lines:
        why = f"skipped: {python} {COMPARE.name} failed: {(proc.stderr.strip().splitlines() or ['?'])[-1]}"
        return {t: why for t in TOOLS}
    return json.loads(lines[-1])


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10_000, help="episodes (default 10000)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeat", type=int, default=3, help="runs of each (the minimum is reported)")
    ap.add_argument("--python", default=os.environ.get("EK_BENCH_COMPARE_PYTHON"),
                    help="the Python that has agentevals and deepeval (default: $EK_BENCH_COMPARE_PYTHON)")
    args = ap.parse_args(argv)
    preds, golds = make_episodes(args.n, seed=args.seed)
    figures: dict[str, Any] = {"episodes": args.n}
    for level in ("call", "arg"):
        def fresh(level: str = level) -> list:  # a new metric each time: nothing prepared
            m = ToolCallMetric(level)
            return [m.score(p, g) for p, g in zip(preds, golds)]

        t0, _ = _timed(fresh, args.repeat)
        m = ToolCallMetric(level)
        fresh_pass = [m.score(p, g) for p, g in zip(preds, golds)]
        t1, warm = _timed(lambda m=m: [m.score(p, g) for p, g in zip(preds, golds)], args.repeat)
        if warm != fresh_pass:
            raise SystemExit(f"bench_toolcalls: a warm {level!r} metric scored differently")
        m = ToolCallMetric(level)
        t2, _ = _timed(lambda m=m: m.score_batch(preds, golds), args.repeat)
        figures[f"tool_call_{level}_per_episode_s"] = t0
        figures[f"tool_call_{level}_per_episode_warm_s"] = t1
        figures[f"tool_call_{level}_batch_s"] = t2
    ours = figures["tool_call_call_per_episode_s"]
    print(f"tool-call scoring of {args.n:,} episodes: ek-agents per episode, a new metric {ours:.3f} s "
          f"(a second pass of one metric {figures['tool_call_call_per_episode_warm_s']:.3f} s; "
          f"batch {figures['tool_call_call_batch_s']:.3f} s; arg level {figures['tool_call_arg_per_episode_s']:.3f} s)")
    for tool, v in compare(preds, golds, args.python, args.repeat).items():
        if isinstance(v, (int, float)):
            figures[f"{tool}_s"] = v
            figures[f"{tool}_vs_ek"] = v / ours
            print(f"  {tool:27s} {v:7.3f} s   ek-agents x{v / ours:.1f} faster")
        else:
            figures[f"{tool}_skipped"] = v
            print(f"  {tool:27s} {v}")
    return figures


if __name__ == "__main__":
    main()
