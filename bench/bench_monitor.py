"""The monitor's statistics by simulation (no servers): false alarms, coverage, detection day.

``python -m bench.bench_monitor [--series 500] [--seed 0]`` simulates production series of
daily windows -- each window ``traces`` traces whose true success is Bernoulli(p of the day),
judged by a judge of given sensitivity / specificity, ``labels`` of them labeled by a person --
and runs them through :func:`ek_agents.stats.windowrates.window_rate` and
:func:`~ek_agents.stats.windowrates.window_alert` exactly as the monitor does (the window's own
labels plus every earlier window's for the judge's error; each window compared with the
windows before it pooled; Bonferroni over the 15-window horizon).

Two scenarios: **stable** (p = 0.80 every day) -- the share of series with any alert (the
false-alarm rate, target <= 5%), the corrected 95% interval's coverage of the day's p (target
0.93-0.97) beside the raw judge rate's; **drift** (0.80 -> 0.65 from day 11) -- the day the
alert first fires. Optional ``--judge-sample N`` judges only N traces a window, stratified over
two equal slices.
"""
from __future__ import annotations

import argparse
import collections
import math
import sys
import time

import numpy as np

from ek_agents.errors import InvalidInput
from ek_agents.stats.windowrates import (LabelTable, SliceCounts, WindowPoint,
                                         stratified_judge_rate, window_alert, window_rate)

__all__ = ["simulate_series", "run", "main"]


def simulate_series(rng: np.random.Generator, days: list, *, traces: int = 400, labels: int = 40,
                    sens: float = 0.90, spec: float = 0.70, judge_sample: int = 0,
                    tolerance: float = 0.0, cost_tolerance: float = 0.0, horizon: int = 15,
                    alpha: float = 0.05) -> list:
    """One series: per window ``(p, rate, alert)``."""
    pooled = LabelTable()
    points: list = []
    out = []
    for p in days:
        y = rng.random(traces) < p
        h = np.where(y, rng.random(traces) < sens, rng.random(traces) < 1.0 - spec)
        slice_of = np.arange(traces) % 2
        # per-trace agent dollars: lognormal, a failure costs a little more (longer loops)
        cost = rng.lognormal(math.log(0.004), 0.4, traces) * np.where(y, 1.0, 1.3)
        judged = np.ones(traces, bool)
        if judge_sample and judge_sample < traces:
            judged[:] = False
            for s in (0, 1):
                idx = np.flatnonzero(slice_of == s)
                judged[rng.choice(idx, judge_sample // 2, replace=False)] = True
        lab = rng.choice(np.flatnonzero(judged), labels, replace=False)
        own = LabelTable.of(y[lab].tolist(), h[lab].tolist())
        pooled = pooled + own
        slices = {str(s): SliceCounts(traces=int((slice_of == s).sum()),
                                      judged=int((judged & (slice_of == s)).sum()),
                                      passed=int((judged & h & (slice_of == s)).sum()))
                  for s in (0, 1)}
        q, vq = stratified_judge_rate(slices)
        point = WindowPoint(judge_rate=q, judge_var=vq,
                            traces=traces, dollars_per_trace=float(cost.mean()),
                            dollars_var=float(cost.var(ddof=1) / traces))
        try:
            rate = window_rate(slices, pooled, own=own, alpha=alpha)
        except InvalidInput:  # the labels cannot measure the judge yet: no rate, no alert
            rate = al = None
        else:
            al = window_alert(point, points, rate, tolerance=tolerance,
                              cost_tolerance=cost_tolerance, alpha=alpha, horizon=horizon)
        points.append(point)
        out.append((p, rate, al))
    return out


def run(n_series: int = 500, seed: int = 0, *, judge_sample: int = 0, drift_series: int = 0,
        days: int = 15) -> dict:
    """Both scenarios; the figures as a dict."""
    rng = np.random.default_rng(seed)
    stable = [0.80] * days
    alarms = cover = raw_cover = n = no_rate = 0
    for _ in range(n_series):
        res = simulate_series(rng, stable, judge_sample=judge_sample, horizon=days)
        alarms += any(a is not None and a.alert for _, _, a in res)
        for p, r, _ in res:
            n += 1
            if r is None:  # counted as a miss: no interval was given
                no_rate += 1
                continue
            cover += r.ci[0] <= p <= r.ci[1]
            raw_cover += r.judge_ci[0] <= p <= r.judge_ci[1]
    first = collections.Counter()
    early = 0
    drift = [0.80] * 10 + [0.65] * (days - 10)
    for _ in range(drift_series or n_series):
        res = simulate_series(rng, drift, judge_sample=judge_sample, horizon=days)
        days_alert = [d + 1 for d, (_, _, a) in enumerate(res) if a is not None and a.alert]
        early += any(d <= 10 for d in days_alert)
        later = [d for d in days_alert if d > 10]
        first[later[0] if later else None] += 1
    return {"series": n_series, "false_alarm_rate": alarms / n_series,
            "coverage": cover / n, "raw_judge_coverage": raw_cover / n, "windows_without_rate": no_rate,
            "drift_first_alert_day": dict(sorted(first.items(), key=lambda kv: (kv[0] is None, kv[0] or 0))),
            "drift_series": drift_series or n_series, "drift_alert_before_day_11": early}


def main(argv: list | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--series", type=int, default=500)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--judge-sample", type=int, default=0)
    a = ap.parse_args(argv)
    t0 = time.perf_counter()
    r = run(a.series, a.seed, judge_sample=a.judge_sample)
    print(f"stable series: {r['series']} x 15 windows of 400 traces, 40 labels a window, judge "
          f"sensitivity 0.90 / specificity 0.70" + (f", {a.judge_sample} judged a window"
                                                    if a.judge_sample else ""))
    print(f"  false alarms: {r['false_alarm_rate']:.3f} of series (target <= 0.05)")
    print(f"  corrected 95% interval covers the day's rate: {r['coverage']:.3f} of windows "
          f"(target 0.93-0.97); raw judge rate's interval: {r['raw_judge_coverage']:.3f}; "
          f"windows whose labels could not measure the judge (no interval, counted as misses): "
          f"{r['windows_without_rate']}")
    print(f"drift 0.80 -> 0.65 from day 11 ({r['drift_series']} series): first alert day "
          f"{r['drift_first_alert_day']}; series alerting on days 2-10: "
          f"{r['drift_alert_before_day_11']}")
    print(f"({time.perf_counter() - t0:.1f} s)")
    ok = (r["false_alarm_rate"] <= 0.05 and 0.93 <= r["coverage"] <= 0.97)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
