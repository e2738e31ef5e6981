"""Benchmark: the bootstrap CI of cost per success, 10k episodes x 2000 resamples.

Run: ``.venv/bin/python -m bench.bench_bootstrap [--n 10000 --resamples 2000 --repeat 5]``.
Times ``stats.bootstrap_ci(rows, "ratio")`` on ``(dollars, success)`` rows,
``cluster_bootstrap_ratio`` (the bootstrap-t over tasks the gate and reports use) and the whole
``cost.cost_report`` of as many episodes (its ``cost_per_success_ci`` is that bootstrap-t), at
one trial per task, so 10k clusters are resampled. Baseline, measured in the same run: the floor
of any numpy bootstrap of this size, drawing the ``resamples x n`` indices with
``numpy.random.default_rng(seed).integers`` (``draw_indices_s``). Every figure is the min of
``--repeat`` rounds, the cases interleaved round by round (so a burst of load on this shared
machine hits them alike); the 1-minute load average before and after is printed beside them.
Goal from the issue: under 0.2 s.

**What limits it** (profiled on the shared 2-core machine, CPU time, min of 9, at load ~6; the
wall figures there are up to twice these): both bootstraps resample the very indices
``integers`` draws (84 ms for the 20M here), so the draws can't be skipped, only made cheaper:
``stats._TaskIndices`` takes the generator's raw 64-bit outputs (``random_raw``: 24 ms) and
applies numpy's own Lemire mapping with array operations (+26 ms) -- the same indices in the
same order. Then, per 64k-index sub-block held in L2:

- ``bootstrap_ci(..., "ratio")``: one gather of ``num + 1j * den`` per index and a sum along
  each resample (+41 ms): ~91 ms in all, about the cost of ``integers`` alone.
- ``cluster_bootstrap_ratio`` needs five sums per resample (``num, den, num^2, num*den,
  den^2``): the indices offset into per-resample slots (+4 ms), one weighted ``bincount`` for
  the counts (+46 ms) and one ``einsum`` of the counts with the five columns (+49 ms): ~149 ms.
  Gathering the five as three columns measured slower. The product is the part left on the
  table: OpenBLAS's ``dot`` does it in ~7-12 ms, but threads once ``m * n * k`` reaches 524288
  (11 rows at 10k tasks), and threaded it measured 10-40x slower than ``einsum`` on this loaded
  machine (3.4 s instead of ~0.15 s at 26 rows); keeping every call under that size would rest
  on one BLAS's internals, so ``einsum`` stays. Since stop 19 the two stages run in two
  threads (numpy releases the GIL in both): the caller draws sub-block i + 1 while one worker
  counts sub-block i (the same arithmetic per sub-block, so the same bits; three buffers).
  Measured at load ~0.7: 0.22-0.25 s -> 0.12 s wall for the sums alone, and the row 0.258 s
  (this stop's first ``make bench``, when the draws alone took 0.121 s, 0.085 s the stop
  before: the machine was slower that hour) -> ~0.145 s; its CPU time is now above its wall
  time (two cores).
- ``cost_report`` adds ~45 ms for 10k episodes: pricing each in Python (~25 ms,
  ``ModelPrice.rates`` builds a dict per episode) and the per-task totals (~6 ms).
"""
from __future__ import annotations

import argparse
import math
import os
import random
import time
from typing import Any, Callable

from ek_agents import Cost, Episode, ModelPrice
from ek_agents.cost import cost_report
from ek_agents.stats import bootstrap_ci, cluster_bootstrap_ratio


def interleaved_min(cases: dict[str, Callable[[], Any]],
                    repeat: int) -> tuple[dict[str, float], dict[str, Any], dict[str, float]]:
    """(min wall seconds of each case over ``repeat`` rounds, each case's last result, min CPU
    seconds of this process); every round runs every case once, in order. On a machine shared
    past its cores the CPU time is the steadier figure: the wall time adds the waits."""
    best = dict.fromkeys(cases, math.inf)
    cpu = dict.fromkeys(cases, math.inf)
    last: dict[str, Any] = {}
    for _ in range(max(1, repeat)):
        for name, fn in cases.items():
            c0, t0 = time.process_time(), time.perf_counter()
            last[name] = fn()
            best[name] = min(best[name], time.perf_counter() - t0)
            cpu[name] = min(cpu[name], time.process_time() - c0)
    return best, last, cpu


def main(argv: list[str] | None = None) -> dict:
    import numpy as np

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--resamples", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)
    rnd = random.Random(0)
    rows = [(rnd.uniform(0.001, 0.05), float(rnd.random() < 0.6)) for _ in range(args.n)]
    dollars, wins = [d for d, _ in rows], [s for _, s in rows]
    price = ModelPrice(input=1.0, output=2.0)  # dollars per million tokens
    eps = [Episode(task_id=f"t{i}", success=s > 0, cost=Cost(input_tokens=int(d * 1e6), output_tokens=10))
           for i, (d, s) in enumerate(rows)]
    load_before = os.getloadavg()[0]
    t, out, cpu = interleaved_min({
        "draw": lambda: np.random.default_rng(0).integers(0, args.n, (args.resamples, args.n)),
        "ci": lambda: bootstrap_ci(rows, "ratio", resamples=args.resamples, seed=0),
        "cluster": lambda: cluster_bootstrap_ratio(dollars, wins, resamples=args.resamples, seed=0),
        "report": lambda: cost_report(eps, price=price, resamples=args.resamples),
    }, args.repeat)
    load_after = os.getloadavg()[0]
    ci, rep = out["ci"], out["report"]
    print(f"bootstrap CI of cost per success, {args.n:,} values x {args.resamples} resamples, min of "
          f"{args.repeat}: bootstrap_ci {t['ci']:.3f} s, cluster_bootstrap_ratio {t['cluster']:.3f} s, "
          f"cost_report {t['report']:.3f} s; drawing the indices alone {t['draw']:.3f} s "
          f"(x{t['ci'] / t['draw']:.2f} / x{t['cluster'] / t['draw']:.2f} / x{t['report'] / t['draw']:.2f}); "
          f"load {load_before:.1f} -> {load_after:.1f}; CPU time {cpu['ci']:.3f} / {cpu['cluster']:.3f} / "
          f"{cpu['report']:.3f} s vs {cpu['draw']:.3f} s (x{cpu['ci'] / cpu['draw']:.2f} / "
          f"x{cpu['cluster'] / cpu['draw']:.2f} / x{cpu['report'] / cpu['draw']:.2f}); "
          f"CI {tuple(round(x, 5) for x in ci)}")
    figures: dict[str, Any] = {"values": args.n, "resamples": args.resamples, "repeat": args.repeat,
                               "load_before": load_before, "load_after": load_after,
                               "draw_indices_s": t["draw"],
                               "bootstrap_ci_s": t["ci"], "cluster_bootstrap_ratio_s": t["cluster"],
                               "cost_report_s": t["report"],
                               "bootstrap_ci_vs_draw_indices": t["ci"] / t["draw"],
                               "cluster_bootstrap_ratio_vs_draw_indices": t["cluster"] / t["draw"],
                               "cost_report_vs_draw_indices": t["report"] / t["draw"],
                               **{f"{key}_cpu_s": cpu[case] for key, case in (
                                   ("draw_indices", "draw"), ("bootstrap_ci", "ci"),
                                   ("cluster_bootstrap_ratio", "cluster"), ("cost_report", "report"))},
                               "cost_per_success_ci": rep.get("cost_per_success_ci")}
    return figures


if __name__ == "__main__":
    main()
