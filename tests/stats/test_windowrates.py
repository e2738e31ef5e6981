"""A production window's corrected rate and the alert across windows (ek_agents.stats.windowrates)."""
from __future__ import annotations

from statistics import NormalDist

import pytest

from bench.bench_monitor import run
from ek_agents.errors import InvalidInput
from ek_agents.stats.windowrates import (LabelTable, SliceCounts, WindowPoint,
                                         stratified_judge_rate, window_alert, window_rate)


def test_rogan_gladen_and_the_stratified_rate_against_direct_arithmetic():
    # judge sensitivity 18/20, specificity 7/10; slices of 300 and 100 traces, 60 and 40 judged
    labels = LabelTable(pass_pass=18, pass_fail=2, fail_pass=3, fail_fail=7)
    slices = {"a": SliceCounts(traces=300, judged=60, passed=48),
              "b": SliceCounts(traces=100, judged=40, passed=20)}
    q, _ = stratified_judge_rate(slices)
    assert q == pytest.approx(0.75 * 0.8 + 0.25 * 0.5)
    r = window_rate(slices, labels)
    assert r.estimate == pytest.approx((q + 0.7 - 1) / (0.9 + 0.7 - 1))
    assert 0 <= r.ci[0] < r.estimate < r.ci[1] <= 1
    # more labels, same error rates: a narrower interval
    r10 = window_rate(slices, LabelTable(180, 20, 30, 70))
    assert r10.ci[1] - r10.ci[0] < r.ci[1] - r.ci[0]


def test_refusals_name_the_problem():
    s = {"a": SliceCounts(traces=10, judged=0, passed=0)}
    with pytest.raises(InvalidInput, match="none judged"):
        stratified_judge_rate(s)
    ok = {"a": SliceCounts(traces=10, judged=10, passed=5)}
    with pytest.raises(InvalidInput, match="successes and 0 failures"):
        window_rate(ok, LabelTable(pass_pass=5))
    with pytest.raises(InvalidInput, match="no information"):
        window_rate(ok, LabelTable(5, 5, 5, 5))


def test_alert_fires_on_a_drop_and_not_within_tolerance():
    labels = LabelTable(90, 10, 30, 70)
    rate = window_rate({"a": SliceCounts(400, 400, 276)}, labels)
    ref = [WindowPoint(judge_rate=0.78, judge_var=0.78 * 0.22 / 400, traces=400)] * 5
    cur = WindowPoint(judge_rate=0.69, judge_var=0.69 * 0.31 / 400, traces=400)
    a = window_alert(cur, ref, rate, horizon=15)
    assert a.alert and a.success_drop == pytest.approx((0.69 - 0.78) / rate.youden)
    assert "fell" in a.reasons[0]
    assert not window_alert(cur, ref, rate, tolerance=0.3, horizon=15).alert
    assert not window_alert(cur, [], rate).alert  # the first window has no reference
    assert a.alpha_per_check == pytest.approx(0.05 / 28)
    assert a.threshold_z == pytest.approx(NormalDist().inv_cdf(1 - 0.05 / 28), abs=1e-6)


def test_small_simulation_false_alarms_coverage_and_detection():
    # the bench's simulation, small and seeded: 40 stable series, 30 drifting from day 11
    r = run(40, seed=3, drift_series=30)
    assert r["false_alarm_rate"] <= 0.10
    assert 0.90 <= r["coverage"] <= 0.995
    assert r["raw_judge_coverage"] < r["coverage"]
    first = r["drift_first_alert_day"]
    assert first.get(11, 0) + first.get(12, 0) >= 24
    assert r["drift_alert_before_day_11"] <= 2
