"""Benchmark: the bootstrap CI of cost per success, 10k episodes x 2000 resamples.

Run: ``.venv/bin/python -m bench.bench_bootstrap [--n 10000 --resamples 2000]``. Times
``stats.bootstrap_ci(rows, "ratio")`` on ``(dollars, success)`` rows and the whole
``cost.cost_report`` of as many episodes (its ``cost_per_success_ci`` is that bootstrap), against
the floor of any such bootstrap measured in the same run: drawing the ``resamples x n`` indices
with ``numpy.random.default_rng(seed).integers``. ``cluster_bootstrap_ratio`` (the bootstrap-t over
tasks the gate and reports use) and ``cost_report`` run at one trial per task, so 10k
clusters are resampled. Goal from the issue: under 0.2 s.
"""
from __future__ import annotations

import argparse
import random
import sys
from typing import Any

from bench.bench_scoring import _timed
from ek_agents import Cost, Episode, ModelPrice
from ek_agents.cost import cost_report
from ek_agents.stats import bootstrap_ci, cluster_bootstrap_ratio


def main(argv: list[str] | None = None) -> dict:
    import numpy as np

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--resamples", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)
    rnd = random.Random(0)
    rows = [(rnd.uniform(0.001, 0.05), float(rnd.random() < 0.6)) for _ in range(args.n)]
    t_draw, _ = _timed(lambda: np.random.default_rng(0).integers(0, args.n, (args.resamples, args.n)), args.repeat)
    t_ci, ci = _timed(lambda: bootstrap_ci(rows, "ratio", resamples=args.resamples, seed=0), args.repeat)
    dollars, wins = [d for d, _ in rows], [s for _, s in rows]
    t_cl, _ = _timed(lambda: cluster_bootstrap_ratio(dollars, wins, resamples=args.resamples, seed=0), args.repeat)
    price = ModelPrice(input=1.0, output=2.0)  # dollars per million tokens
    eps = [Episode(task_id=f"t{i}", success=s > 0, cost=Cost(input_tokens=int(d * 1e6), output_tokens=10))
           for i, (d, s) in enumerate(rows)]
    t_rep, rep = _timed(lambda: cost_report(eps, price=price, resamples=args.resamples), args.repeat)
    print(f"bootstrap CI of cost per success, {args.n:,} values x {args.resamples} resamples: "
          f"bootstrap_ci {t_ci:.3f} s, cluster_bootstrap_ratio {t_cl:.3f} s, cost_report {t_rep:.3f} s; drawing the indices alone {t_draw:.3f} s "
          f"(x{t_ci / t_draw:.1f} / x{t_rep / t_draw:.1f}); CI {tuple(round(x, 5) for x in ci)}")
    figures: dict[str, Any] = {"values": args.n, "resamples": args.resamples, "draw_indices_s": t_draw,
                               "bootstrap_ci_s": t_ci, "cluster_bootstrap_ratio_s": t_cl,
                               "cost_report_s": t_rep,
                               "bootstrap_ci_vs_draw_indices": t_ci / t_draw,
                               "cost_report_vs_draw_indices": t_rep / t_draw,
                               "cost_per_success_ci": rep.get("cost_per_success_ci")}
    return figures


if __name__ == "__main__":
    main()
