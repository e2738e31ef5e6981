"""Honest intervals, measured: coverage of the 95% intervals and the gate's false alarms and power.

Seeded simulations of agents whose tasks differ in difficulty (issue 12):

- **success CI coverage**: task success probabilities ~ Beta(0.6, 0.4) (mean 0.6), n tasks x k
  trials; the task-clustered interval (``reliability``'s default) vs Wilson over all trials.
- **cost-per-success CI coverage**: the same tasks, each with a mean per-trial cost
  lognormal and higher on harder tasks (``exp(log 0.01 + (1 - p) + 0.5 N)``), trials
  ``x exp(0.3 N)``; the truth is ``E[cost] / E[p]`` (Monte Carlo, 4M tasks); the bootstrap-t
  over tasks (``cost_report``'s) vs the percentile bootstrap over episodes.
- **gate**: pairs of runs on shared tasks (p ~ Beta(1.4, 0.6), mean 0.70), 60 tasks x k=4;
  under the null the same p for both runs; the alternative multiplies every p by 6/7
  (0.70 -> 0.60). The paired gate and the unpaired one (``paired=False``) on the **same**
  pairs, both through ``reliability`` + ``gate.regression_gate``.
- **sequential gate** on the same kind of pairs: null, and a 30-point drop (p x 4/7,
  0.70 -> 0.40); its false alarms, the fraction of the fixed design's trials it used, and how
  often it agrees with the fixed design (the paired gate on the full run).

``python -m bench stats`` runs the full sizes (1000 simulations for coverage, 2000 pairs for
the gates); ``main(["--quick"])`` small ones (the tests use those helpers at small sizes).
"""
from __future__ import annotations

import argparse
import os
import time
from types import SimpleNamespace

import numpy as np

from bench.bench_bootstrap import interleaved_min
from ek_agents import stats
from ek_agents.gate import regression_gate
from ek_agents.reporting import reliability
from ek_agents.sequential import sequential_gate


def success_coverage(n_tasks: int, k: int, sims: int = 1000, seed: int = 0) -> dict:
    """Coverage of the true mean 0.6 by the clustered and the Wilson 95% intervals."""
    rng = np.random.default_rng(seed)
    hit = {"clustered": 0, "wilson": 0}
    for _ in range(sims):
        c = rng.binomial(k, rng.beta(0.6, 0.4, n_tasks))
        for method in hit:
            lo, hi = stats.success_interval(c, [k] * n_tasks, method=method)[0]
            hit[method] += lo <= 0.6 <= hi
    return {m: h / sims for m, h in hit.items()}


def _cost_tasks(rng: np.random.Generator, n: int) -> tuple:
    p = rng.beta(0.6, 0.4, n)
    mu = np.exp(np.log(0.01) + (1.0 - p) + 0.5 * rng.standard_normal(n))
    return p, mu


def cost_truth(seed: int = 123, n: int = 4_000_000) -> float:
    """``E[per-trial cost] / E[success]`` of the simulated task population."""
    p, mu = _cost_tasks(np.random.default_rng(seed), n)
    return float(mu.mean() / p.mean())


def cost_coverage(n_tasks: int, k: int, sims: int = 1000, seed: int = 1,
                  resamples: int = 2000) -> dict:
    """Coverage of the true cost per success by the task bootstrap-t and the episode bootstrap."""
    truth = cost_truth()
    rng = np.random.default_rng(seed)
    hit = {"task_bootstrap_t": 0, "episode_percentile": 0}
    for i in range(sims):
        p, mu = _cost_tasks(rng, n_tasks)
        succ = rng.random((n_tasks, k)) < p[:, None]
        cost = mu[:, None] * np.exp(0.3 * rng.standard_normal((n_tasks, k)) - 0.045)
        lo, hi = stats.cluster_bootstrap_ratio(cost.sum(1), succ.sum(1), resamples=resamples, seed=i)
        hit["task_bootstrap_t"] += lo <= truth <= hi
        lo, hi = stats.bootstrap_ci(np.c_[cost.ravel(), succ.ravel()], "ratio",
                                    resamples=resamples, seed=i)
        hit["episode_percentile"] += lo <= truth <= hi
    return {m: h / sims for m, h in hit.items()}


def _report(outcomes: np.ndarray, seed: int):
    return reliability({f"t{i:03d}": [bool(x) for x in row] for i, row in enumerate(outcomes)},
                       k=outcomes.shape[1], seed=seed, warn_deterministic=False)


def _pair_outcomes(rng: np.random.Generator, n_tasks: int, k: int, factor: float) -> tuple:
    p = rng.beta(1.4, 0.6, n_tasks)
    base = rng.random((n_tasks, k)) < p[:, None]
    cur = rng.random((n_tasks, k)) < (p * factor)[:, None]
    return base, cur


def gate_simulation(pairs: int = 2000, n_tasks: int = 60, k: int = 4, seed: int = 7) -> dict:
    """False alarms (null) and power (0.70 -> 0.60) of the paired and the unpaired gate."""
    rng = np.random.default_rng(seed)
    out = {"false_alarm_paired": 0, "false_alarm_unpaired": 0, "power_paired": 0,
           "power_unpaired": 0}
    for i in range(pairs):
        for factor, key in ((1.0, "false_alarm"), (6 / 7, "power")):
            base, cur = _pair_outcomes(rng, n_tasks, k, factor)
            rb, rc = _report(base, 2 * i), _report(cur, 2 * i + 1)
            out[f"{key}_paired"] += not regression_gate(rc, rb).passed
            out[f"{key}_unpaired"] += not regression_gate(rc, rb, paired=False).passed
    return {key: v / pairs for key, v in out.items()}


def sequential_simulation(pairs: int = 2000, n_tasks: int = 60, k: int = 4, seed: int = 11) -> dict:
    """The sequential gate vs the fixed design on null pairs and on a 30-point drop."""
    rng = np.random.default_rng(seed)
    false_alarms = agree = clear = 0
    used_drop: list[float] = []
    caught_drop = 0
    for i in range(pairs):
        for factor in (1.0, 4 / 7):
            base, cur = _pair_outcomes(rng, n_tasks, k, factor)
            rb = _report(base, i)
            tids = sorted(rb.per_task)
            rows = dict(zip(tids, cur))

            def run_batch(batch: list, rows: dict = rows) -> list:
                return [SimpleNamespace(task_id=t, success=bool(rows[t][j])) for t, j in batch]

            _, verdict = sequential_gate(run_batch, tids, k=k, baseline=rb,
                                         success=lambda ep: ep.success)
            fixed = regression_gate(_report(cur, i + 10_000), rb).passed
            clear += 1
            agree += verdict.passed == fixed
            if factor == 1.0:
                false_alarms += not verdict.passed
            else:
                caught_drop += not verdict.passed
                used_drop.append(verdict.trials_run / verdict.trials_planned)
    return {"false_alarm": false_alarms / pairs, "power_30pt": caught_drop / pairs,
            "mean_trial_fraction_30pt": float(np.mean(used_drop)), "agreement": agree / clear}


def bootstrap_speed(n: int = 10_000, resamples: int = 2000, repeat: int = 5) -> dict:
    """Seconds (min of ``repeat`` rounds, the cases interleaved round by round) of the task
    bootstrap-t of a ratio over ``n`` tasks, of the episode percentile bootstrap
    (``bootstrap_ci(..., "ratio")``) on the same values, and of the baseline both share:
    drawing their ``resamples x n`` indices with ``Generator.integers``."""
    rng = np.random.default_rng(0)
    num, den = rng.random(n), (rng.random(n) < 0.6).astype(float)
    cases = {
        "draw": lambda: np.random.default_rng(0).integers(0, n, (resamples, n)),
        "task": lambda: stats.cluster_bootstrap_ratio(num, den, resamples=resamples),
        "episode": lambda: stats.bootstrap_ci(np.c_[num, den], "ratio", resamples=resamples),
    }
    best, _, _ = interleaved_min(cases, repeat)
    task, episode, draw = best["task"], best["episode"], best["draw"]
    return {"cluster_bootstrap_t_10k_s": task, "episode_bootstrap_10k_s": episode,
            "draw_indices_10k_s": draw,
            "cluster_bootstrap_t_vs_episode_bootstrap": task / episode,
            "cluster_bootstrap_t_vs_draw_indices": task / draw,
            "episode_bootstrap_vs_draw_indices": episode / draw}


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(prog="python -m bench stats")
    ap.add_argument("--quick", action="store_true", help="small sizes (seconds)")
    args = ap.parse_args(argv or [])
    sims, pairs = (100, 100) if args.quick else (1000, 2000)
    figs: dict = {}
    t0 = time.perf_counter()
    for n, k in ((24, 4), (100, 8)):
        cov = success_coverage(n, k, sims)
        print(f"success CI coverage {n}x{k} ({sims} sims): clustered {cov['clustered']:.3f}, "
              f"wilson {cov['wilson']:.3f}")
        figs[f"success_cov_{n}x{k}_clustered"] = cov["clustered"]
        figs[f"success_cov_{n}x{k}_wilson"] = cov["wilson"]
    cov = cost_coverage(30, 4, sims)
    print(f"cost-per-success CI coverage 30x4 ({sims} sims): task bootstrap-t "
          f"{cov['task_bootstrap_t']:.3f}, episode percentile {cov['episode_percentile']:.3f}")
    figs.update({f"cost_cov_30x4_{m}": v for m, v in cov.items()})
    g = gate_simulation(pairs)
    print(f"gate 60x4 ({pairs} pairs): false alarms paired {g['false_alarm_paired']:.4f}, "
          f"unpaired {g['false_alarm_unpaired']:.4f}; power 0.70->0.60 paired "
          f"{g['power_paired']:.4f}, unpaired {g['power_unpaired']:.4f}")
    figs.update({f"gate_{m}": v for m, v in g.items()})
    s = sequential_simulation(pairs)
    print(f"sequential gate 60x4 ({pairs} pairs): false alarms {s['false_alarm']:.4f}; 30-pt drop "
          f"caught {s['power_30pt']:.4f} with {100 * s['mean_trial_fraction_30pt']:.1f}% of the "
          f"fixed design's trials on average; agreement with the fixed design "
          f"{s['agreement']:.4f}")
    figs.update({f"sequential_{m}": v for m, v in s.items()})
    figs["simulations_s"] = time.perf_counter() - t0
    load = os.getloadavg()[0]
    sp = bootstrap_speed()
    print(f"bootstrap of a ratio over 10,000 tasks x 2000 resamples (min of 5): bootstrap-t over "
          f"tasks {sp['cluster_bootstrap_t_10k_s']:.3f} s, percentile over episodes "
          f"{sp['episode_bootstrap_10k_s']:.3f} s "
          f"({sp['cluster_bootstrap_t_vs_episode_bootstrap']:.2f}x); drawing the indices alone "
          f"{sp['draw_indices_10k_s']:.3f} s (x{sp['cluster_bootstrap_t_vs_draw_indices']:.2f} / "
          f"x{sp['episode_bootstrap_vs_draw_indices']:.2f}); load {load:.1f} -> "
          f"{os.getloadavg()[0]:.1f}")
    figs.update(sp)
    return figs


if __name__ == "__main__":
    main()
