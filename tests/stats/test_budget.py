"""The budget planner: its variance components against a direct computation, and plans checked
by seeded simulation on fresh tasks of the population the pilot came from (bench/bench_judge.py,
bench/bench_budget.py and bench/bench_plan_assurance.py print the same at more settings)."""
from __future__ import annotations

import importlib

import numpy as np
import pytest

from ek_agents.stats.budget import pilot_components, plan_budget
from ek_agents.errors import InvalidInput
from ek_agents.stats.judgecorrect import judge_corrected_rate

bench = importlib.import_module("bench.bench_judge")
bench_budget = importlib.import_module("bench.bench_budget")


def test_components_recover_a_known_population():
    rng = np.random.default_rng(1)
    pilot = bench.pilot_report(rng, tasks=4000, k=6, a=2.0, b=2.0)  # mean 0.5, var 0.05
    c = pilot_components(pilot)
    assert c.mean == pytest.approx(0.5, abs=0.01)
    assert c.between == pytest.approx(0.05, abs=0.005)
    assert c.within == pytest.approx(0.25 - 0.05, abs=0.005)
    assert c.dollars_per_trial == 0.03 and c.n_tasks == 4000


@pytest.mark.parametrize("seed,width,power,drop", [(0, 0.12, 0.8, 0.10), (1, 0.20, 0.9, 0.15)])
def test_plans_deliver_by_simulation(seed, width, power, drop):
    r = bench.planner_simulation(runs=200, seed=seed, width=width, power=power, drop=drop)
    assert 0.8 <= r["width_ratio"] <= 1.1, r
    assert r["power_achieved"] >= power - 0.05, r


def test_plan_is_typed_priced_and_one_sentence():
    rng = np.random.default_rng(3)
    pilot = bench.pilot_report(rng)
    p = plan_budget(pilot, target_width=0.15)
    assert p.n_trials == p.n_tasks * p.k and p.n_tasks <= 40 and p.goal == "width"
    assert p.dollars == round(p.n_trials * 0.03, 2)
    assert p.sentence.startswith("For a 95% interval 15.0 points wide") and "$" in p.sentence
    assert p.expected_width <= 0.15
    tight = plan_budget(pilot, target_width=0.02)
    assert not tight.enough_tasks and "add tasks" in tight.sentence and tight.n_tasks > 40
    unpriced = plan_budget({"per_task": pilot["per_task"]}, target_width=0.15)
    assert unpriced.dollars is None and "dollars unknown" in unpriced.sentence


def test_a_judged_pilot_plans_labels_too():
    rng = np.random.default_rng(4)
    pilot = bench.pilot_report(rng, tasks=60)
    y = rng.random(400) < 0.6
    h = bench.judge_verdicts(rng, y, 0.9, 0.7)
    judge = judge_corrected_rate(y[:60], h[:60], h[60:])
    with_labels = plan_budget(pilot, target_width=0.15, labels=judge, max_tasks=10_000)
    without = plan_budget(pilot, target_width=0.15, max_tasks=10_000)
    assert with_labels.n_labels >= 10 and "plan-labels" in with_labels.sentence
    assert with_labels.n_trials > without.n_trials  # half the variance budget went to labels
    plug = plan_budget(pilot, target_width=0.15, labels=judge, max_tasks=10_000, method="plug-in")
    # the judge's disagreement at its 80% quantile asks for more labels than its point estimate
    assert 10 <= plug.n_labels < with_labels.n_labels


@pytest.mark.parametrize("kwargs,needle", [
    (dict(), "give target_width=W"), (dict(target_width=0.1, power=0.8), "one of the three"),
    (dict(target_width=0.1, cps_width=0.2), "one of the three"),
    (dict(cps_width=0.2), "cps_width needs a priced pilot"),
    (dict(power=0.8), "needs drop=D"), (dict(target_width=1.5), "target_width must be in (0, 1)"),
])
def test_bad_requests_name_the_fix(kwargs, needle):
    pilot = bench.pilot_report(np.random.default_rng(0))
    with pytest.raises(InvalidInput, match=needle.replace("(", r"\(").replace(")", r"\)")):
        plan_budget(pilot, **kwargs)
    with pytest.raises(InvalidInput, match="k >= 2"):
        plan_budget({"per_task": {"a": {"n": 1, "c": 1}, "b": {"n": 1, "c": 0}}}, target_width=0.1,
                    method="plug-in")
    with pytest.raises(InvalidInput, match="unknown method='plugin'"):
        plan_budget(pilot, target_width=0.1, method="plugin")


@pytest.mark.parametrize("seed,width", [(1, 0.3), (2, 0.5)])
def test_cost_per_success_plan_delivers_by_simulation(seed, width):
    r = bench_budget.cps_simulation(runs=60, seed=seed, width=width, resamples=300)
    assert 0.75 <= r["width_ratio"] <= 1.1, r
    assert r["expected"] <= width


def test_labels_plan_delivers_the_width_it_promises():
    r = bench_budget.labels_simulation(runs=100, seed=2, width=0.2)
    assert r["n_labels"] >= 10 and 0.75 <= r["width_ratio"] <= 1.1, r


def test_cost_per_success_components_and_sentence():
    rng = np.random.default_rng(5)
    pilot = bench_budget.priced_pilot(rng)
    tot = pilot["cost"]["task_totals"].values()
    d = np.array([t["dollars"] for t in tot]); s = np.array([t["n_success"] for t in tot])
    r = d.sum() / s.sum()
    p = plan_budget(pilot, cps_width=0.3, max_tasks=5000, method="plug-in")
    cc = p.cost_components
    assert cc.cost_per_success == pytest.approx(r) and cc.success_per_trial == pytest.approx(s.sum() / 200)
    # the report's linearised variance at the pilot's own design, from the fitted components
    se = np.sqrt(40 / 39 * ((d - r * s) ** 2).sum()) / s.sum()
    assert np.sqrt((cc.between + cc.within / 5) / (40 * cc.success_per_trial ** 2)) == \
        pytest.approx(se, rel=0.15)
    assert p.goal == "cps_width" and p.expected_width <= 0.3 and p.n_trials == p.n_tasks * p.k
    assert p.sentence.startswith("For a 95% interval on the cost per success 30% of the pilot's $")
    assert p.dollars == round(p.n_trials * pilot["cost"]["mean_dollars"], 2)
    wider = plan_budget(pilot, cps_width=0.6, max_tasks=5000, method="plug-in")
    assert wider.n_trials < p.n_trials
    nowin = {"per_task": {"a": {"n": 2, "c": 0}, "b": {"n": 2, "c": 0}},
             "cost": {"task_totals": {"a": {"n": 2, "n_success": 0, "dollars": 1.0},
                                      "b": {"n": 2, "n_success": 0, "dollars": 1.0}}}}
    with pytest.raises(InvalidInput, match="no success"):
        plan_budget(nowin, cps_width=0.3)
