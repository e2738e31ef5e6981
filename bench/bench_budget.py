"""The budget planner's cost-per-success and labels plans (issue 26, Build 5), measured.

Seeded simulations through the library's own functions (``plan_budget``,
``cluster_bootstrap_ratio`` -- the report's cost-per-success interval -- and
``judge_corrected_rate``):

- **cost per success**: a priced pilot (40 tasks x k = 5; per-task success ~ Beta(1.2, 0.8);
  per-task dollars per trial lognormal around $0.03, higher on harder tasks; lognormal
  within-task noise on each trial's dollars) is planned by ``plan_budget(cps_width=W)``; the plan
  is run 200 times from the pilot's fitted distribution (tasks drawn from the pilot's tasks,
  each with its dollars per trial and a success probability shrunk to the pilot's fitted
  between-task variance, keeping its covariance with dollars) and the report's interval on cost
  per success measured: mean width / (W x the pilot's cost per success). ``cost_noise`` adds
  lognormal noise to each simulated trial's dollars, which the planner does not model (it
  sees only task totals): printed as a sensitivity figure.
- **labels**: a judged pilot (40 tasks x k = 5, a judge of sensitivity 0.9 / specificity 0.8,
  40 labels) planned by ``plan_budget(target_width=W, labels=...)``; the plan (G x k trials,
  ``n_labels`` of them labeled at random) is run 200 times from the fitted distribution (the
  judge with the pilot's measured sensitivity and specificity) and the
  judge-corrected interval (cluster-robust over tasks) measured: mean width / W, for 6 pilots.

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

from bench.bench_judge import fitted_p, judge_verdicts, pilot_report


def priced_pilot(rng: np.random.Generator, *, tasks: int = 40, k: int = 5, a: float = 1.2,
                 b: float = 0.8, dollars: float = 0.03, between_sd: float = 0.5,
                 within_sd: float = 0.3) -> dict:
    """A priced pilot's report document: per-task counts, ``cost.task_totals`` and
    ``cost.mean_dollars`` (per-task dollars per trial higher on harder tasks)."""
    p = rng.beta(a, b, tasks)
    per_trial = dollars * rng.lognormal(0.0, between_sd, tasks) * (1.5 - p)
    c = rng.binomial(k, p)
    spent = [float((per_trial[i] * rng.lognormal(-within_sd ** 2 / 2, within_sd, k)).sum())
             for i in range(tasks)]
    totals = {f"t{i}": {"n": k, "n_success": int(c[i]), "dollars": spent[i]} for i in range(tasks)}
    return {"per_task": {f"t{i}": {"n": k, "c": int(c[i])} for i in range(tasks)},
            "cost": {"mean_dollars": sum(spent) / (tasks * k), "task_totals": totals}}


def _fitted_tasks(rng: np.random.Generator, pilot: dict, between: float, g: int):
    """``g`` tasks from the pilot's: dollars per trial as measured, success probability
    ``a + b c + s e`` (the pilot's regression on dollars, its residual shrunk so the success
    variance is the fitted between-task one)."""
    tot = list(pilot["cost"]["task_totals"].values())
    cost = np.array([t["dollars"] / t["n"] for t in tot])
    phat = np.array([t["n_success"] / t["n"] for t in tot])
    slope = np.cov(cost, phat)[0, 1] / cost.var(ddof=1) if cost.var() > 0 else 0.0
    fit = phat.mean() + slope * (cost - cost.mean())
    resid = phat - fit
    room = max(between - slope ** 2 * cost.var(ddof=1), 0.0)
    shrink = np.sqrt(room / resid.var(ddof=1)) if resid.var() > 0 else 0.0
    p = np.clip(fit + shrink * resid, 0.0, 1.0)
    idx = rng.integers(0, len(tot), g)
    return p[idx], cost[idx]


def cps_simulation(*, runs: int = 200, seed: int = 0, width: float = 0.3, max_tasks: int = 2000,
                   resamples: int = 1000, cost_noise: float = 0.0) -> dict:
    """A priced pilot, a plan for a cost-per-success width ``width`` (relative), run ``runs``
    times from the pilot's fitted distribution: the report interval's mean relative width."""
    rng = np.random.default_rng(seed)
    pilot = priced_pilot(rng)
    plan = plan_budget(pilot, cps_width=width, max_tasks=max_tasks)
    r0 = plan.cost_components.cost_per_success
    widths = []
    for i in range(runs):
        p, cost = _fitted_tasks(rng, pilot, plan.components.between, plan.n_tasks)
        wins = rng.binomial(plan.k, p)
        noise = rng.lognormal(-cost_noise ** 2 / 2, cost_noise, (plan.n_tasks, plan.k)) \
            if cost_noise else np.ones((plan.n_tasks, plan.k))
        spent = (cost[:, None] * noise).sum(axis=1)
        lo, hi = cluster_bootstrap_ratio(spent.tolist(), wins.tolist(), resamples=resamples,
                                         seed=i)
        widths.append((hi - lo) / r0)
    w = float(np.mean(widths))
    return {"target": width, "plan": f"{plan.n_tasks}x{plan.k}", "expected": plan.expected_width,
            "width_mean": w, "width_ratio": w / width, "sentence": plan.sentence}


def labels_simulation(*, runs: int = 200, seed: int = 0, width: float = 0.15,
                      sens: float = 0.9, spec: float = 0.8, max_tasks: int = 2000) -> dict:
    """A judged pilot (40 labels), a plan for a corrected-rate ``width`` with labels, run
    ``runs`` times: the judge-corrected interval's mean width, labels drawn at random. The
    simulated judge has the pilot's measured sensitivity and specificity (the distribution the
    plan was made from), the true per-task success the pilot's fitted Beta."""
    rng = np.random.default_rng(seed)
    pilot = pilot_report(rng)
    y = rng.random(200) < 0.6
    h = judge_verdicts(rng, y, sens, spec)
    judge = judge_corrected_rate(y[:40], h[:40], h[40:])
    plan = plan_budget(pilot, target_width=width, labels=judge, max_tasks=max_tasks)
    g, k, n = plan.n_tasks, plan.k, plan.n_labels
    groups = np.repeat(np.arange(g), k)
    widths = []
    for _ in range(runs):
        p = fitted_p(rng, plan.components, g)
        truth = rng.random(g * k) < np.repeat(p, k)
        verdict = judge_verdicts(rng, truth, judge.sensitivity, judge.specificity)
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
    runs = 40 if args.quick else 200
    figs: dict = {}
    t0 = time.perf_counter()
    print(f"cost per success: priced pilot 40 tasks x k=5, each plan run {runs} times from the "
          "pilot's fitted distribution; report interval (bootstrap-t over tasks)")
    for i, w in enumerate((0.2, 0.3, 0.5)):
        r = cps_simulation(runs=runs, seed=200 + i, width=w)
        n = cps_simulation(runs=runs, seed=200 + i, width=w, cost_noise=0.5)
        print(f"  cps width {w}: plan {r['plan']} -> mean width {r['width_mean']:.4f} "
              f"({r['width_ratio']:.3f}x W); with unmodelled per-trial cost noise (lognormal sd "
              f"0.5) {n['width_ratio']:.3f}x W")
        print(f"    {r['sentence']}")
        figs[f"cps_width{w}_ratio"] = r["width_ratio"]
        figs[f"cps_width{w}_noise0.5_ratio"] = n["width_ratio"]
    print(f"labels: judged pilots (40 tasks x k=5, judge (0.9, 0.8), 40 labels; 6 pilots per "
          f"width), each plan run {runs} times, labels at random, corrected interval "
          "cluster-robust over tasks; mean width / W per pilot")
    ratios = []
    for w in (0.1, 0.15, 0.2):
        rs = [labels_simulation(runs=runs, seed=300 + i, width=w) for i in range(6)]
        print(f"  width {w}: " + ", ".join(f"{r['plan']} + {r['n_labels']} labels -> "
                                           f"{r['width_ratio']:.3f}" for r in rs))
        ratios += [r["width_ratio"] for r in rs]
        figs[f"labels_width{w}_ratio_min"] = min(r["width_ratio"] for r in rs)
        figs[f"labels_width{w}_ratio_max"] = max(r["width_ratio"] for r in rs)
    print(f"  labels plans: mean width {min(ratios):.3f}-{max(ratios):.3f} x W over 18 plans; "
          f"{sum(0.9 <= r <= 1.1 for r in ratios)} of 18 within +-10%")
    print(f"    e.g. {rs[0]['sentence']}")
    figs["simulations_s"] = time.perf_counter() - t0
    return figs


if __name__ == "__main__":
    main()
