"""The budget planner's cost-per-success and labels plans, measured on the populations the pilots come from.

Seeded simulations through the library's own functions (``plan_budget``,
``cluster_bootstrap_ratio`` -- the report's cost-per-success interval -- and
``judge_corrected_rate``):

- **cost per success**: a priced pilot (40 tasks x k = 5; per-task success ~ Beta(1.2, 0.8);
  per-task dollars per trial lognormal around $0.03, higher on harder tasks; lognormal
  within-task noise on each trial's dollars, sd 0.3) is planned by ``plan_budget(cps_width=W)``;
  the plan is run on fresh tasks of the same population and the report's interval on cost per
  success measured: mean width relative to the run's cost per success, over W. Three planners: plug-in
  (task totals only), assurance with each trial's dollar spread measured (``dollars_sq`` in the
  task totals) and assurance with it assumed (``cost_cv`` 0.5).
- **labels**: a judged pilot (40 tasks x k = 5, a judge of sensitivity 0.9 / specificity 0.8,
  40 labels) planned by ``plan_budget(target_width=W, labels=...)``; the plan (G x k trials,
  ``n_labels`` of them labeled at random) is run on fresh tasks of the population with the
  judge's true error rates, and the judge-corrected interval (cluster-robust over tasks)
  measured: mean width / W, for 6 pilots, plug-in and assurance.

``python -m bench budget`` runs the full sizes; ``main(["--quick"])`` small ones; the tests call
the same helpers at seconds-sized settings.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from ek_agents.stats.bootstrap import cluster_bootstrap_ratio
from ek_agents.stats.budget import plan_budget
from ek_agents.stats.judgecorrect import judge_corrected_rate

from bench.bench_judge import judge_verdicts, pilot_report


def population_tasks(rng: np.random.Generator, g: int, *, a: float = 1.2, b: float = 0.8,
                     dollars: float = 0.03, between_sd: float = 0.5) -> tuple:
    """``g`` tasks of the priced population: success probability ~ Beta(a, b), dollars per
    trial lognormal around ``dollars``, higher on harder tasks."""
    p = rng.beta(a, b, g)
    return p, dollars * rng.lognormal(0.0, between_sd, g) * (1.5 - p)


def priced_pilot(rng: np.random.Generator, *, tasks: int = 40, k: int = 5, a: float = 1.2,
                 b: float = 0.8, dollars: float = 0.03, between_sd: float = 0.5,
                 within_sd: float = 0.3, spread: bool = True) -> dict:
    """A priced pilot's report document: per-task counts, ``cost.task_totals`` (with each task's
    ``dollars_sq`` and ``dollars_success`` when ``spread``) and ``cost.mean_dollars``; each
    trial's dollars vary lognormally (sd ``within_sd``) around its task's."""
    p, per_trial = population_tasks(rng, tasks, a=a, b=b, dollars=dollars, between_sd=between_sd)
    won = rng.random((tasks, k)) < p[:, None]
    x = per_trial[:, None] * rng.lognormal(-within_sd ** 2 / 2, within_sd, (tasks, k))
    totals = {f"t{i}": {"n": k, "n_success": int(won[i].sum()), "dollars": float(x[i].sum())}
              for i in range(tasks)}
    if spread:
        for i, t in enumerate(totals.values()):
            t["dollars_sq"] = float((x[i] ** 2).sum())
            t["dollars_success"] = float(x[i][won[i]].sum())
    return {"per_task": {f"t{i}": {"n": k, "c": int(won[i].sum())} for i in range(tasks)},
            "cost": {"mean_dollars": float(x.sum()) / (tasks * k), "task_totals": totals}}


def cps_simulation(*, runs: int = 200, seed: int = 0, width: float = 0.3, max_tasks: int = 2000,
                   resamples: int = 1000, within_sd: float = 0.3, spread: bool = True,
                   method: str = "assurance") -> dict:
    """A priced pilot from the population, a plan for a cost-per-success width ``width``
    (relative to the cost per success a run reports), run ``runs`` times on fresh tasks from the
    same population (each trial's dollars varying within its task by ``within_sd``): the report
    interval's mean width relative to the run's own cost per success, over ``width``."""
    rng = np.random.default_rng(seed)
    pilot = priced_pilot(rng, within_sd=within_sd, spread=spread)
    plan = plan_budget(pilot, cps_width=width, max_tasks=max_tasks, method=method)
    g, k = plan.n_tasks, plan.k
    widths = []
    for i in range(runs):
        p, cost = population_tasks(rng, g)
        wins = rng.binomial(k, p)
        noise = rng.lognormal(-within_sd ** 2 / 2, within_sd, (g, k))
        spent = (cost[:, None] * noise).sum(axis=1)
        lo, hi = cluster_bootstrap_ratio(spent.tolist(), wins.tolist(), resamples=resamples,
                                         seed=i)
        widths.append((hi - lo) / (spent.sum() / max(wins.sum(), 1)))
    w = float(np.mean(widths))
    return {"target": width, "plan": f"{g}x{k}", "expected": plan.expected_width,
            "width_mean": w, "width_ratio": w / width, "sentence": plan.sentence}


def labels_simulation(*, runs: int = 200, seed: int = 0, width: float = 0.15,
                      sens: float = 0.9, spec: float = 0.8, max_tasks: int = 2000,
                      method: str = "assurance") -> dict:
    """A judged pilot (40 labels), a plan for a corrected-rate ``width`` with labels, run
    ``runs`` times on fresh tasks of the pilot's population (per-task success ~ Beta(1.2,
    0.8), the judge's true sensitivity and specificity): the judge-corrected interval's mean
    width, labels drawn at random."""
    rng = np.random.default_rng(seed)
    pilot = pilot_report(rng)
    y = rng.random(200) < 0.6
    h = judge_verdicts(rng, y, sens, spec)
    judge = judge_corrected_rate(y[:40], h[:40], h[40:])
    plan = plan_budget(pilot, target_width=width, labels=judge, max_tasks=max_tasks,
                       method=method)
    g, k, n = plan.n_tasks, plan.k, plan.n_labels
    groups = np.repeat(np.arange(g), k)
    widths = []
    for _ in range(runs):
        p = rng.beta(1.2, 0.8, g)  # the population pilot_report draws from
        truth = rng.random(g * k) < np.repeat(p, k)
        verdict = judge_verdicts(rng, truth, sens, spec)
        lab = np.zeros(g * k, bool)
        lab[rng.choice(g * k, n, replace=False)] = True
        r = judge_corrected_rate(truth[lab], verdict[lab], verdict[~lab],
                                 labeled_groups=groups[lab].tolist(),
                                 unlabeled_groups=groups[~lab].tolist())
        widths.append(r.ci[1] - r.ci[0])
    w = float(np.mean(widths))
    return {"target": width, "plan": f"{g}x{k}", "n_labels": n, "expected": plan.expected_width,
            "width_mean": w, "width_ratio": w / width, "sentence": plan.sentence}


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(prog="python -m bench budget")
    ap.add_argument("--quick", action="store_true", help="small sizes (seconds)")
    args = ap.parse_args(argv or [])
    runs, pilots = (40, 3) if args.quick else (100, 10)
    figs: dict = {}
    t0 = time.perf_counter()
    print(f"cost per success: {pilots} priced pilots of 40 tasks x k=5 per width, each plan run "
          f"{runs} times on fresh tasks of the pilot's population (each trial's dollars lognormal "
          "sd 0.3 within its task); report interval (bootstrap-t over tasks); its mean width "
          "relative to the run's cost per success, over W, per pilot: min / median / max, and "
          "plans within 1.10x")
    for w in (0.2, 0.3, 0.5):
        for method, spread in (("plug-in", False), ("assurance", True), ("assurance", False)):
            rs = [cps_simulation(runs=runs, seed=200 + i, width=w, method=method, spread=spread,
                                 resamples=500)["width_ratio"] for i in range(pilots)]
            how = method + (", spread measured" if spread else
                            "" if method == "plug-in" else ", spread assumed (cv 0.5)")
            print(f"  cps width {w}, {how}: {min(rs):.3f} / {np.median(rs):.3f} / {max(rs):.3f}; "
                  f"{sum(r <= 1.1 for r in rs)} of {pilots} within 1.10x")
            key = f"cps_width{w}_{method}{'_measured' if spread else ''}"
            figs[f"{key}_ratio_median"] = float(np.median(rs))
            figs[f"{key}_hit"] = sum(r <= 1.1 for r in rs) / pilots
    print(f"labels: judged pilots (40 tasks x k=5, judge (0.9, 0.8), 40 labels; 6 pilots per "
          f"width), each plan run {runs} times on fresh tasks, labels at random, corrected "
          "interval cluster-robust over tasks; mean width / W per pilot")
    for method in ("plug-in", "assurance"):
        ratios = []
        for w in (0.1, 0.15, 0.2):
            rs = [labels_simulation(runs=runs, seed=300 + i, width=w, method=method)
                  for i in range(6)]
            print(f"  {method}, width {w}: " + ", ".join(
                f"{r['plan']} + {r['n_labels']} labels -> {r['width_ratio']:.3f}" for r in rs))
            ratios += [r["width_ratio"] for r in rs]
        figs[f"labels_{method}_hit"] = sum(r <= 1.1 for r in ratios) / len(ratios)
        print(f"  {method}: mean width {min(ratios):.3f}-{max(ratios):.3f} x W over 18 plans; "
              f"{sum(r <= 1.1 for r in ratios)} of 18 within 1.10x")
    figs["simulations_s"] = time.perf_counter() - t0
    return figs


if __name__ == "__main__":
    main()
