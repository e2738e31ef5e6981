"""Judge-corrected success rates (issue 26), measured: coverage, width, the gate, the planner.

Seeded simulations through the library's own functions (``judge_corrected_rate``,
``corrected_difference``, ``plan_budget``):

- **iid grid**: N = 2,000 judged trials of which ``n`` are labeled (the labeled ones a random
  subset, the other ``N - n`` judged only); true success ``p`` in {0.3, 0.6, 0.9}; a judge with
  (sensitivity, specificity) in {(0.95, 0.90), (0.85, 0.70), (0.99, 0.99)}; ``n`` in
  {50, 100, 300}. Per cell: coverage of ``p`` and mean width of the default interval
  (``score``), of ppi_py's CLT interval (``clt``, equal to ``ppi_py.ppi_mean_ci`` to 1e-9:
  tests/stats/test_judgecorrect.py) and of the judge's raw Wilson interval.
- **task-clustered grid**: 100 tasks x k = 20, per-task success ``~ Beta(2m, 2(1-m))`` (mean
  ``m`` in {0.3, 0.6, 0.9}), the same three judges; labels sampled **by task** (10 or 25 whole
  tasks labeled); the truth is ``m`` (tasks like these). Default with groups vs clt vs raw.
- **gate**: two runs of 100 tasks x k = 10 on the same tasks (per-task success ~ Beta(1.4, 0.6),
  mean 0.70), graded by a lenient judge (sensitivity 0.95, specificity 0.70), the same 20 tasks
  labeled in each run; null: the same per-task success; alternative: every task's success
  x 6/7 (0.70 -> 0.60, a 10-point drop). False alarms and power of ``corrected_difference``'s
  one-sided 2.5% bound, paired over tasks.
- **planner**: a pilot (40 tasks x k = 5, per-task success ~ Beta(1.2, 0.8)) planned by
  ``plan_budget`` for a target width W and for power P against a drop; the plan is then run 200
  times on fresh tasks of the same population and the mean width / the power measured
  (``bench/bench_plan_assurance.py`` does this over many pilots and three populations).

``python -m bench judge`` runs the full sizes (a few minutes on one core); ``main(["--quick"])``
small ones. The tests call the same helpers at seconds-sized settings.
"""
from __future__ import annotations

import argparse
import math
import time

import numpy as np

from ek_agents.stats.bootstrap import paired_difference
from ek_agents.stats.budget import plan_budget
from ek_agents.stats.clustered import clustered_rate
from ek_agents.stats.correctedrates import corrected_difference, cost_per_corrected_success
from ek_agents.stats import judgecorrect
from ek_agents.stats.judgecorrect import DISAGREEMENT_PSEUDOCOUNT, judge_corrected_rate

RATES = (0.3, 0.6, 0.9)
JUDGES = ((0.95, 0.90), (0.85, 0.70), (0.99, 0.99))
LABELS = (50, 100, 300)
TASKS_LABELED = (10, 25)
#: ``DISAGREEMENT_PSEUDOCOUNT`` and its neighbours, swept over the iid grid.
PSEUDOCOUNTS = (0.0, 0.01, 0.03, 0.1, 0.3)


def judge_verdicts(rng: np.random.Generator, y: np.ndarray, sens: float, spec: float) -> np.ndarray:
    """A judge with the given sensitivity / specificity grading true outcomes ``y``."""
    r = rng.random(y.shape)
    return np.where(y, r < sens, r < 1.0 - spec)


def iid_cell(p: float, sens: float, spec: float, n: int, *, N: int = 2000, sims: int = 2000,
             seed: int = 0) -> dict:
    """Coverage and mean width of the default, the clt and the judge's raw interval."""
    rng = np.random.default_rng(seed)
    hit = {"score": 0, "clt": 0, "raw": 0}
    width = {"score": 0.0, "clt": 0.0, "raw": 0.0}
    for _ in range(sims):
        y = rng.random(N) < p
        h = judge_verdicts(rng, y, sens, spec)
        for method in ("score", "clt"):
            r = judge_corrected_rate(y[:n], h[:n], h[n:], method=method)
            hit[method] += r.ci[0] <= p <= r.ci[1]
            width[method] += r.ci[1] - r.ci[0]
        hit["raw"] += r.judge_ci[0] <= p <= r.judge_ci[1]
        width["raw"] += r.judge_ci[1] - r.judge_ci[0]
    return {**{f"cov_{m}": v / sims for m, v in hit.items()},
            **{f"width_{m}": v / sims for m, v in width.items()}}


def pseudocount_sweep(values=PSEUDOCOUNTS, *, sims: int = 1000, seed: int = 0) -> dict:
    """Coverage and mean width of the default interval over the iid grid for each pseudocount
    (``judgecorrect.DISAGREEMENT_PSEUDOCOUNT`` set for the sweep, restored after). The same
    seeded runs for every value, so the differences are the pseudocount's alone."""
    out = {}
    try:
        for c in values:
            judgecorrect.DISAGREEMENT_PSEUDOCOUNT = c
            cells = {}
            for i, p in enumerate(RATES):
                for j, (se, sp) in enumerate(JUDGES):
                    for n in LABELS:
                        rng = np.random.default_rng(seed + 1000 * i + 100 * j + n)
                        hit, width = 0, 0.0
                        for _ in range(sims):
                            y = rng.random(2000) < p
                            h = judge_verdicts(rng, y, se, sp)
                            r = judge_corrected_rate(y[:n], h[:n], h[n:])
                            hit += r.ci[0] <= p <= r.ci[1]
                            width += r.ci[1] - r.ci[0]
                        cells[(p, se, sp, n)] = (hit / sims, width / sims)
            out[c] = cells
    finally:
        judgecorrect.DISAGREEMENT_PSEUDOCOUNT = DISAGREEMENT_PSEUDOCOUNT
    return out


def print_sweep(sweep: dict) -> dict:
    """The sweep's summary per pseudocount, and the cells where the pseudocount matters."""
    figs = {}
    chosen = sweep.get(DISAGREEMENT_PSEUDOCOUNT)
    print("| pseudocount | min coverage | mean coverage | cells < 0.93 | cells > 0.97 | "
          "mean width / chosen's |")
    print("|---|---|---|---|---|---|")
    for c, cells in sweep.items():
        cov = [v[0] for v in cells.values()]
        rel = [v[1] / chosen[k][1] for k, v in cells.items()] if chosen else [math.nan]
        mark = " (chosen)" if c == DISAGREEMENT_PSEUDOCOUNT else ""
        print(f"| {c:g}{mark} | {min(cov):.3f} | {np.mean(cov):.3f} | "
              f"{sum(x < 0.93 for x in cov)} | {sum(x > 0.97 for x in cov)} | {np.mean(rel):.3f} |")
        figs[f"pseudocount{c:g}_cov_min"] = min(cov)
        figs[f"pseudocount{c:g}_cov_mean"] = float(np.mean(cov))
        figs[f"pseudocount{c:g}_width_vs_chosen"] = float(np.mean(rel))
    spread = sorted(sweep[next(iter(sweep))], key=lambda k: -(max(s[k][0] for s in sweep.values())
                                                                - min(s[k][0] for s in sweep.values())))
    print("the cells where it matters most, coverage (mean width):")
    print("| true p | judge | labels | " + " | ".join(f"{c:g}" for c in sweep) + " |")
    print("|---|---|---|" + "---|" * len(sweep))
    for key in spread[:6]:
        p, se, sp, n = key
        print(f"| {p} | ({se}, {sp}) | {n} | " + " | ".join(
            f"{s[key][0]:.3f} ({s[key][1]:.3f})" for s in sweep.values()) + " |")
    return figs


def clustered_suite(rng: np.random.Generator, mean: float, sens: float, spec: float, *,
                    tasks: int = 100, k: int = 20, conc: float = 2.0, p: np.ndarray | None = None):
    """One run: ``(y, h)`` of shape (tasks, k) with per-task success ``~ Beta``."""
    if p is None:
        p = rng.beta(mean * conc, (1.0 - mean) * conc, tasks)
    y = rng.random((len(p), k)) < p[:, None]
    return y, judge_verdicts(rng, y, sens, spec)


def grouped_rate(y: np.ndarray, h: np.ndarray, labeled_tasks: np.ndarray, method: str = "score"):
    """``judge_corrected_rate`` of a (tasks, k) run whose ``labeled_tasks`` are labeled whole."""
    tasks, k = y.shape
    lab = np.zeros(tasks, bool)
    lab[labeled_tasks] = True
    ids = np.repeat(np.arange(tasks), k).reshape(tasks, k)
    return judge_corrected_rate(y[lab].ravel(), h[lab].ravel(), h[~lab].ravel(),
                                labeled_groups=ids[lab].ravel(), unlabeled_groups=ids[~lab].ravel(),
                                method=method)


def clustered_cell(mean: float, sens: float, spec: float, g_labeled: int, *, sims: int = 1000,
                   seed: int = 0, tasks: int = 100, k: int = 20) -> dict:
    """Coverage and width with labels sampled by task."""
    rng = np.random.default_rng(seed)
    hit = {"score": 0, "clt": 0, "raw": 0}
    width = {"score": 0.0, "clt": 0.0, "raw": 0.0}
    for _ in range(sims):
        y, h = clustered_suite(rng, mean, sens, spec, tasks=tasks, k=k)
        labeled = rng.choice(tasks, g_labeled, replace=False)
        for method in ("score", "clt"):
            r = grouped_rate(y, h, labeled, method)
            hit[method] += r.ci[0] <= mean <= r.ci[1]
            width[method] += r.ci[1] - r.ci[0]
            if method == "score":
                hit["raw"] += r.judge_ci[0] <= mean <= r.judge_ci[1]
                width["raw"] += r.judge_ci[1] - r.judge_ci[0]
    return {**{f"cov_{m}": v / sims for m, v in hit.items()},
            **{f"width_{m}": v / sims for m, v in width.items()}}


def stratified_cell(mean: float, sens: float, spec: float, per_task: int, *, sims: int = 1000,
                    seed: int = 0, tasks: int = 100, k: int = 20) -> dict:
    """Coverage and width with ``per_task`` labels in every task (``plan_labels``' design:
    labeled and unlabeled trials share tasks, one sandwich over tasks)."""
    rng = np.random.default_rng(seed)
    hit, width = 0, 0.0
    ids = np.repeat(np.arange(tasks), k).reshape(tasks, k)
    for _ in range(sims):
        y, h = clustered_suite(rng, mean, sens, spec, tasks=tasks, k=k)
        lab = np.zeros_like(y)
        for t in range(tasks):
            lab[t, rng.choice(k, per_task, replace=False)] = True
        r = judge_corrected_rate(y[lab], h[lab], h[~lab], labeled_groups=ids[lab],
                                 unlabeled_groups=ids[~lab])
        hit += r.ci[0] <= mean <= r.ci[1]
        width += r.width
    return {"cov_score": hit / sims, "width_score": width / sims}


def gate_simulation(pairs: int = 2000, *, seed: int = 0, tasks: int = 100, k: int = 10,
                    g_labeled: int = 20, sens: float = 0.95, spec: float = 0.70,
                    drop_factor: float = 6 / 7) -> dict:
    """False alarms (null) and power (every task's success x ``drop_factor``) of the
    corrected-rate comparison at one-sided 2.5%, paired over tasks, a lenient judge."""
    rng = np.random.default_rng(seed)
    fired = {"null": 0, "drop": 0}
    for _ in range(pairs):
        p = rng.beta(1.4, 0.6, tasks)
        labeled = rng.choice(tasks, g_labeled, replace=False)
        yb, hb = clustered_suite(rng, 0, sens, spec, k=k, p=p)
        base = grouped_rate(yb, hb, labeled)
        for case, pc in (("null", p), ("drop", p * drop_factor)):
            yc, hc = clustered_suite(rng, 0, sens, spec, k=k, p=pc)
            d = corrected_difference(grouped_rate(yc, hc, labeled), base, alpha=0.025)
            fired[case] += d.upper < 0
    return {"false_alarm": fired["null"] / pairs, "power_10pt": fired["drop"] / pairs}


def cost_coverage(sims: int = 1000, *, seed: int = 3) -> float:
    """Coverage of the true cost per success (``E[cost per trial] / E[p]``) by the Fieller
    interval of ``cost_per_corrected_success``: 100 tasks x k = 10, p ~ Beta(1.2, 0.8), a
    lenient judge (0.95, 0.70), 20 tasks labeled, per-task cost higher on harder tasks."""
    rng = np.random.default_rng(seed)
    pp = rng.beta(1.2, 0.8, 2_000_000)
    truth = float(np.exp(np.log(0.01) + (1 - pp)).mean() / pp.mean())
    hit = 0
    ids = np.repeat(np.arange(100), 10).reshape(100, 10)
    for _ in range(sims):
        p = rng.beta(1.2, 0.8, 100)
        y, h = clustered_suite(rng, 0, 0.95, 0.70, k=10, p=p)
        lab = rng.choice(100, 20, replace=False)
        r = grouped_rate(y, h, lab)
        m = np.zeros(100, bool)
        m[lab] = True
        cost = np.exp(np.log(0.01) + (1 - p))[:, None] * np.exp(0.3 * rng.standard_normal((100, 10)) - 0.045)
        c = cost_per_corrected_success(r, np.r_[cost[m].ravel(), cost[~m].ravel()],
                                       groups=np.r_[ids[m].ravel(), ids[~m].ravel()].tolist())
        hit += c.ci[0] <= truth <= c.ci[1]
    return hit / sims


# -- the budget planner ----------------------------------------------------------------------

def pilot_report(rng: np.random.Generator, *, tasks: int = 40, k: int = 5, a: float = 1.2,
                 b: float = 0.8, dollars_per_trial: float = 0.03) -> dict:
    """A pilot run's report document: per-task counts and the measured cost per trial."""
    c = rng.binomial(k, rng.beta(a, b, tasks))
    return {"per_task": {f"t{i}": {"n": k, "c": int(ci)} for i, ci in enumerate(c)},
            "cost": {"mean_dollars": dollars_per_trial}}


def planner_simulation(*, runs: int = 200, seed: int = 0, width: float = 0.12, power: float = 0.8,
                       drop: float = 0.1, max_tasks: int = 300, a: float = 1.2, b: float = 0.8,
                       method: str = "assurance") -> dict:
    """A pilot from the population Beta(a, b), a plan for ``width`` and one for ``power``
    against ``drop``; each plan run ``runs`` times on fresh tasks of that population (not the
    pilot's fit): the mean width of the reported (task-clustered) interval, and the paired
    gate's detection rate (per-task success ``p (1 - drop / mean)`` for the candidate)."""
    rng = np.random.default_rng(seed)
    pilot = pilot_report(rng, a=a, b=b)
    pw = plan_budget(pilot, target_width=width, max_tasks=max_tasks, method=method)
    widths = []
    for _ in range(runs):
        p = rng.beta(a, b, pw.n_tasks)
        c = rng.binomial(pw.k, p)
        lo, hi = clustered_rate(c.tolist(), [pw.k] * pw.n_tasks).ci
        widths.append(hi - lo)
    pp = plan_budget(pilot, power=power, drop=drop, max_tasks=max_tasks, method=method)
    hits = 0
    scale = 1.0 - drop / (a / (a + b))
    for _ in range(runs):
        p = rng.beta(a, b, pp.n_tasks)
        base = rng.binomial(pp.k, p)
        cand = rng.binomial(pp.k, np.clip(p * scale, 0, 1))
        d = paired_difference(cand.tolist(), [pp.k] * pp.n_tasks, base.tolist(), [pp.k] * pp.n_tasks)
        hits += d.upper(0.025) < 0
    return {"width_target": width, "width_plan": f"{pw.n_tasks}x{pw.k}",
            "width_mean": float(np.mean(widths)), "width_ratio": float(np.mean(widths)) / width,
            "power_target": power, "power_plan": f"{pp.n_tasks}x{pp.k}", "power_achieved": hits / runs,
            "width_sentence": pw.sentence, "power_sentence": pp.sentence}


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(prog="python -m bench judge")
    ap.add_argument("--quick", action="store_true", help="small sizes (seconds)")
    args = ap.parse_args(argv or [])
    sims, csims, pairs = (200, 100, 200) if args.quick else (4000, 2000, 2000)
    figs: dict = {}
    t0 = time.perf_counter()
    print(f"iid: N = 2000 judged trials, {sims} runs per cell; coverage (mean width)")
    print("| true p | judge (sens, spec) | labels | default | clt (ppi_py) | judge raw | "
          "width default / clt |")
    print("|---|---|---|---|---|---|---|")
    worst = [1.0, 0.0, 0.0]
    for i, p in enumerate(RATES):
        for j, (se, sp) in enumerate(JUDGES):
            for n in LABELS:
                c = iid_cell(p, se, sp, n, sims=sims, seed=1000 * i + 100 * j + n)
                ratio = c["width_score"] / c["width_clt"]
                print(f"| {p} | ({se}, {sp}) | {n} | {c['cov_score']:.3f} ({c['width_score']:.3f}) "
                      f"| {c['cov_clt']:.3f} ({c['width_clt']:.3f}) | {c['cov_raw']:.3f} | "
                      f"{ratio:.2f}x |")
                key = f"iid_p{p}_se{se}_sp{sp}_n{n}"
                figs[f"{key}_cov_default"] = c["cov_score"]
                figs[f"{key}_cov_clt"] = c["cov_clt"]
                figs[f"{key}_cov_raw"] = c["cov_raw"]
                figs[f"{key}_width_ratio"] = ratio
                worst[0] = min(worst[0], c["cov_score"])
                worst[1] = max(worst[1], c["cov_score"])
                if c["cov_clt"] >= 0.93:
                    worst[2] = max(worst[2], ratio)
    figs["iid_cov_default_min"], figs["iid_cov_default_max"], figs["iid_width_vs_clt_max"] = worst
    print(f"default coverage {worst[0]:.3f}-{worst[1]:.3f} over 27 cells; mean width at most "
          f"{worst[2]:.2f}x clt's where clt covers >= 0.93")
    print(f"\ntask-clustered: 100 tasks x k=20, p_task ~ Beta(2m, 2(1-m)), labels by task, "
          f"{csims} runs per cell")
    print("| mean m | judge | tasks labeled | default | clt (ppi_py) | judge raw (clustered) |")
    print("|---|---|---|---|---|---|")
    lo, hi = 1.0, 0.0
    for i, m in enumerate(RATES):
        for j, (se, sp) in enumerate(JUDGES):
            for gl in TASKS_LABELED:
                c = clustered_cell(m, se, sp, gl, sims=csims, seed=7000 + 100 * i + 10 * j + gl)
                print(f"| {m} | ({se}, {sp}) | {gl} | {c['cov_score']:.3f} ({c['width_score']:.3f}) "
                      f"| {c['cov_clt']:.3f} ({c['width_clt']:.3f}) | {c['cov_raw']:.3f} |")
                key = f"clustered_m{m}_se{se}_sp{sp}_g{gl}"
                figs[f"{key}_cov_default"] = c["cov_score"]
                figs[f"{key}_cov_clt"] = c["cov_clt"]
                figs[f"{key}_cov_raw"] = c["cov_raw"]
                lo, hi = min(lo, c["cov_score"]), max(hi, c["cov_score"])
    figs["clustered_cov_default_min"], figs["clustered_cov_default_max"] = lo, hi
    print(f"default coverage {lo:.3f}-{hi:.3f} over 18 task-clustered cells")
    print("\nlabels stratified by task (plan_labels' design), 100 tasks x k=20:")
    for i, (m, se, sp, per) in enumerate(((0.3, 0.99, 0.99, 2), (0.6, 0.95, 0.70, 1),
                                          (0.9, 0.95, 0.90, 1), (0.9, 0.85, 0.70, 3))):
        c = stratified_cell(m, se, sp, per, sims=csims // 2, seed=9000 + i)
        print(f"  mean {m}, judge ({se}, {sp}), {per * 100} labels: coverage {c['cov_score']:.3f} "
              f"(width {c['width_score']:.3f})")
        figs[f"stratified_m{m}_se{se}_sp{sp}_n{per * 100}_cov_default"] = c["cov_score"]
    print(f"\nDISAGREEMENT_PSEUDOCOUNT swept over the iid grid (27 cells, {sims // 4} runs per "
          "cell, the same runs for every value): the default interval's coverage and width")
    figs.update(print_sweep(pseudocount_sweep(sims=sims // 4)))
    g = gate_simulation(pairs)
    print(f"\ngate on corrected rates, 100 tasks x k=10, lenient judge (0.95, 0.70), 20 tasks "
          f"labeled, {pairs} pairs: false alarms {g['false_alarm']:.4f}, power at a 10-point "
          f"drop (0.70 -> 0.60) {g['power_10pt']:.3f}")
    figs.update({f"gate_{k}": v for k, v in g.items()})
    figs["cost_per_corrected_success_cov"] = cost_coverage(pairs // 2)
    print(f"cost per corrected success, Fieller over tasks (100 x k=10, 20 tasks labeled, "
          f"{pairs // 2} runs): coverage {figs['cost_per_corrected_success_cov']:.3f}")
    print("\nplanner: pilot 40 tasks x k=5 (p ~ Beta(1.2, 0.8), $0.03/trial), each plan run 200 "
          "times on fresh tasks of that population")
    for i, (w, pw, dr) in enumerate(((0.12, 0.8, 0.10), (0.06, 0.9, 0.05), (0.20, 0.8, 0.15))):
        r = planner_simulation(seed=100 + i, width=w, power=pw, drop=dr)
        print(f"  width {w}: plan {r['width_plan']} -> mean width {r['width_mean']:.4f} "
              f"({r['width_ratio']:.3f}x W); power {pw} vs a {dr} drop: plan {r['power_plan']} -> "
              f"{r['power_achieved']:.3f}")
        print(f"    {r['width_sentence']}")
        figs[f"planner_width{w}_ratio"] = r["width_ratio"]
        figs[f"planner_power{pw}_drop{dr}_achieved"] = r["power_achieved"]
    figs["simulations_s"] = time.perf_counter() - t0
    return figs


if __name__ == "__main__":
    main()

