"""The budget planner against the populations its pilots come from: how often a plan delivers.

For each of three populations of tasks (true per-task success ~ Beta(2, 2), Beta(0.5, 0.5),
Beta(5, 1)), 30 pilots of 30 tasks x k = 4 are drawn; each pilot is planned by
``plan_budget`` twice -- ``method="plug-in"`` (the pilot's point estimates: the planner as it
was) and ``method="assurance"`` (the default: sized over the populations the pilot could have
come from) -- for a 95% interval 0.10 wide on the success rate, and for 80% power against a
10-point drop (the paired gate, one-sided 2.5%). Each plan is then run on **fresh tasks from the
population** (not from the pilot's fit): 40 runs per width plan, the reported interval's width
(``clustered_rate``, vectorised here and checked against the library's on each plan's first
run); 400 pairs of runs per power plan (with 40, a power of 0.80 would read below 0.75 one time
in five from binomial noise alone), the gate's decision (``paired_difference``'s one-sided
bound, vectorised the same way), the candidate's per-task success ``p (1 - 0.10 / mean)``.

Printed per population and planner: the fraction of plans whose mean width is at most 1.10 x
the target (goal >= 80%), the median delivered width (goal >= 0.75 x the target: not
wasteful), the median trials; the fraction of power plans delivering power >= 0.75 (goal >=
80%), their median power and trials. Two suites: ``max_tasks`` the pilot's 30 tasks (the
default: the plan says when more tasks are needed, and they are then drawn) and a suite of 200.

``python -m bench plan_assurance`` (about two minutes on two shared cores); ``main(["--quick"])``
fewer pilots.
"""
from __future__ import annotations

import argparse
import functools
import time

import numpy as np

from ek_agents.stats.bootstrap import paired_difference
from ek_agents.stats.budget import plan_budget
from ek_agents.stats.clustered import clustered_rate
from ek_agents.stats.intervals import Z95, t_quantile

POPULATIONS = ((2.0, 2.0), (0.5, 0.5), (5.0, 1.0))
TARGET, POWER, DROP = 0.10, 0.8, 0.10
METHODS = ("plug-in", "assurance")


@functools.lru_cache(maxsize=None)
def _tq(q: float, df: int) -> float:
    return t_quantile(q, df)


def pilot_doc(rng: np.random.Generator, a: float, b: float, tasks: int = 30, k: int = 4) -> dict:
    """A pilot report: ``tasks`` tasks of the population, ``k`` trials each."""
    c = rng.binomial(k, rng.beta(a, b, tasks))
    return {"per_task": {f"t{i}": {"n": k, "c": int(x)} for i, x in enumerate(c)},
            "cost": {"mean_dollars": 0.01}}


def clustered_widths(c: np.ndarray, k: int) -> np.ndarray:
    """``clustered_rate(c_row, [k] * G).ci`` width of each row of ``c`` (runs, G), vectorised."""
    runs, g = c.shape
    n_tot = g * k
    p = c.sum(axis=1) / n_tot
    pq = p * (1.0 - p)
    if k == 1:
        n_eff, z = np.full(runs, float(n_tot)), Z95
    else:
        ss = ((c - p[:, None] * k) ** 2).sum(axis=1)
        binom = pq * n_tot
        deff = np.where(binom > 0, np.maximum(1.0, ss / np.where(binom > 0, binom, 1.0)), 1.0)
        n_eff, z = n_tot / deff, _tq(0.975, g - 1)
    z2 = z * z
    denom = 1.0 + z2 / n_eff
    center = (p + z2 / (2 * n_eff)) / denom
    half = z * np.sqrt(pq / n_eff + z2 / (4 * n_eff ** 2)) / denom
    lo = np.where(p <= 0, 0.0, np.clip(center - half, 0.0, 1.0))
    hi = np.where(p >= 1, 1.0, np.clip(center + half, 0.0, 1.0))
    return hi - lo


def gate_fires(cand: np.ndarray, base: np.ndarray, k: int) -> np.ndarray:
    """``paired_difference(cand, k, base, k).upper(0.025) < 0`` per row, vectorised."""
    g = cand.shape[1]
    n = g * k
    ra, rb = cand.sum(axis=1) / n, base.sum(axis=1) / n
    u = (cand - ra[:, None] * k) / n - (base - rb[:, None] * k) / n
    se = np.sqrt(g / (g - 1) * (u * u).sum(axis=1))
    return (ra - rb) + _tq(0.975, g - 1) * se < 0


def delivered_width(rng: np.random.Generator, a: float, b: float, g: int, k: int,
                    runs: int) -> float:
    """Mean reported width of a ``g`` x ``k`` plan over ``runs`` runs on fresh tasks."""
    c = rng.binomial(k, rng.beta(a, b, (runs, g)))
    w = clustered_widths(c, k)
    lo, hi = clustered_rate(c[0].tolist(), [k] * g).ci
    assert abs((hi - lo) - w[0]) < 1e-9, (hi - lo, w[0])
    return float(w.mean())


def delivered_power(rng: np.random.Generator, a: float, b: float, g: int, k: int,
                    pairs: int) -> float:
    """The paired gate's detection rate of the drop for a ``g`` x ``k`` plan."""
    p = rng.beta(a, b, (pairs, g))
    base = rng.binomial(k, p)
    cand = rng.binomial(k, p * (1.0 - DROP / (a / (a + b))))
    fires = gate_fires(cand, base, k)
    d = paired_difference(cand[0].tolist(), [k] * g, base[0].tolist(), [k] * g)
    assert (d.upper(0.025) < 0) == fires[0]
    return float(fires.mean())


def campaign(a: float, b: float, *, pilots: int = 30, runs: int = 40, pairs: int = 400,
             max_tasks: int | None = None, seed: int = 0) -> dict:
    """Plans of ``pilots`` pilots from Beta(a, b), each method, and what they delivered."""
    rng = np.random.default_rng(seed)
    out: dict = {m: {"width": [], "width_trials": [], "power": [], "power_trials": []}
                 for m in METHODS}
    for i in range(pilots):
        pilot = pilot_doc(rng, a, b)
        for m in METHODS:
            pw = plan_budget(pilot, target_width=TARGET, method=m, max_tasks=max_tasks, seed=i)
            out[m]["width"].append(delivered_width(rng, a, b, pw.n_tasks, pw.k, runs))
            out[m]["width_trials"].append(pw.n_trials)
            pp = plan_budget(pilot, power=POWER, drop=DROP, method=m, max_tasks=max_tasks, seed=i)
            out[m]["power"].append(delivered_power(rng, a, b, pp.n_tasks, pp.k, pairs))
            out[m]["power_trials"].append(pp.n_trials)
    return out


def summary(r: dict) -> dict:
    w, pw = np.array(r["width"]), np.array(r["power"])
    return {"width_hit": float((w <= 1.10 * TARGET).mean()), "width_median": float(np.median(w)),
            "width_trials": float(np.median(r["width_trials"])),
            "power_hit": float((pw >= 0.75).mean()), "power_median": float(np.median(pw)),
            "power_trials": float(np.median(r["power_trials"]))}


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(prog="python -m bench plan_assurance")
    ap.add_argument("--quick", action="store_true", help="8 pilots per population (seconds)")
    args = ap.parse_args(argv or [])
    pilots = 8 if args.quick else 30
    figs: dict = {}
    t0 = time.perf_counter()
    for suite in (None, 200):
        name = "the pilot's 30 (default max_tasks)" if suite is None else f"{suite} (max_tasks={suite})"
        print(f"\nsuite: {name}; {pilots} pilots of 30 tasks x k=4 per population; width plans "
              f"for {TARGET} run 40 times, power plans ({POWER} vs a {DROP:.2f} drop) 400 pairs, "
              "on fresh tasks from the population")
        print("| population | planner | mean width <= 1.10 x 0.10 | median width | median trials "
              "| power >= 0.75 | median power | median trials |")
        print("|---|---|---|---|---|---|---|---|")
        for j, (a, b) in enumerate(POPULATIONS):
            r = campaign(a, b, pilots=pilots, max_tasks=suite, seed=100 * j + (suite or 0))
            for m in METHODS:
                s = summary(r[m])
                print(f"| Beta({a:g}, {b:g}) | {m} | {100 * s['width_hit']:.0f}% | "
                      f"{s['width_median']:.3f} | {s['width_trials']:.0f} | "
                      f"{100 * s['power_hit']:.0f}% | {s['power_median']:.3f} | "
                      f"{s['power_trials']:.0f} |")
                key = f"suite{suite or 30}_beta{a:g}_{b:g}_{m}"
                figs.update({f"{key}_{k}": v for k, v in s.items()})
    figs["simulations_s"] = time.perf_counter() - t0
    print(f"\n{figs['simulations_s']:.0f} s")
    return figs


if __name__ == "__main__":
    main()
