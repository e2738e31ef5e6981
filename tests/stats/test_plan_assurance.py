"""The budget planner plans from its pilot's uncertainty: a noisy pilot widens the plan, a pilot
that cannot tell says so, unpriced tasks are counted, and a handful of pilots from a population
deliver what their plans promise on fresh tasks of it (bench/bench_plan_assurance.py: 30 pilots
of three populations each, the old planner beside)."""
from __future__ import annotations

import importlib
import json
import random

import numpy as np
import pytest

from ek_agents.base import Cost, Episode
from ek_agents.cli import main
from ek_agents.cost import per_million
from ek_agents.errors import InvalidInput
from ek_agents.stats.budget import plan_budget
from ek_agents.stats.pilotdraws import success_draws

assurance_bench = importlib.import_module("bench.bench_plan_assurance")


def _pilot(counts, k):
    return {"per_task": {f"t{i}": {"n": k, "c": int(c)} for i, c in enumerate(counts)},
            "cost": {"mean_dollars": 0.01}}


def test_a_pilot_that_estimates_no_spread_is_not_trusted():
    # the case: 30 tasks x k=4 from Beta(2, 2) (between-task variance 0.05) whose point
    # estimate of the between-task variance is 0; the plug-in plan fits 30 tasks, which no k can
    # make 0.10 wide (0.167 at best with 30 such tasks)
    rng = np.random.default_rng(92)
    pilot = _pilot(rng.binomial(4, rng.beta(2, 2, 30)), 4)
    old = plan_budget(pilot, target_width=0.1, method="plug-in")
    new = plan_budget(pilot, target_width=0.1)
    assert old.components.between == 0.0 and old.enough_tasks and old.n_tasks == 30
    assert new.between_upper > 0.015 and not new.enough_tasks and new.n_tasks > 300
    assert "up to" in new.sentence and "80% probability" in new.sentence
    assert "add tasks" in new.sentence and "point estimates" in old.sentence
    assert new.method == "assurance" and new.assurance == 0.8 and old.assurance is None


def test_the_plan_widens_as_the_pilot_gets_noisier():
    # the same per-task proportions on 10 tasks and on 40 (each repeated 4 times), 6 trials each
    base = [0, 2, 3, 5, 6, 4, 1, 6, 3, 2]
    small, large = _pilot(base, 6), _pilot(base * 4, 6)
    trials = {}
    for name, pilot in (("small", small), ("large", large)):
        for method in ("plug-in", "assurance"):
            trials[name, method] = plan_budget(pilot, power=0.8, drop=0.1, max_tasks=200,
                                               method=method).n_trials
    assert trials["small", "assurance"] > trials["large", "assurance"] >= trials["large", "plug-in"]
    draws_small = success_draws([(c, 6) for c in base])
    draws_large = success_draws([(c, 6) for c in base * 4])
    assert np.quantile(draws_small.between, 0.9) > np.quantile(draws_large.between, 0.9)
    assert abs(np.median(draws_large.between) - plan_budget(large, target_width=0.1,
               method="plug-in").components.between) < 0.02  # the posterior sits on the estimate


def test_a_pilot_that_cannot_tell_says_so_and_names_the_pilot_that_would():
    few = plan_budget(_pilot([1, 3, 2, 4, 0], 4), target_width=0.15, max_tasks=1000)
    assert len(few.notes) == 1 and "cannot pin down the between-task spread" in few.sentence
    assert "a pilot of at least 10 tasks x k=4 would" in few.sentence
    one = plan_budget(_pilot([1, 0, 1, 1, 0, 1] * 5, 1), target_width=0.15, max_tasks=150)
    assert one.components is None and "one trial per task" in one.sentence
    assert "a pilot of 30 tasks x k=2 would measure it" in one.sentence
    assert "between-task sd unknown" in one.sentence
    # with 150 tasks, k > 1 is needed: sized over the split's whole range, so more than a pilot
    # of the same success that measured the split as all within-task noise would need
    measured = plan_budget(_pilot([3, 2, 4, 3, 2, 3] * 5, 5), target_width=0.15, max_tasks=150)
    assert one.k > 1 and one.n_trials > measured.n_trials
    with pytest.raises(InvalidInput, match="method='assurance'"):
        plan_budget(_pilot([1, 0] * 5, 1), target_width=0.15, method="plug-in")


def test_unpriced_tasks_are_counted_in_the_plan_and_its_sentence():
    rng = np.random.default_rng(7)
    counts = rng.binomial(4, 0.6, 20)
    totals = {f"t{i}": {"n": 4, "n_success": int(c), "dollars": 0.04 + 0.01 * (i % 3)}
              for i, c in enumerate(counts) if i >= 3}
    totals["t3"] = {"n": 2, "n_success": min(int(counts[3]), 2), "dollars": 0.02}  # half priced
    pilot = {"per_task": {f"t{i}": {"n": 4, "c": int(c)} for i, c in enumerate(counts)},
             "cost": {"mean_dollars": 0.011, "task_totals": totals}}
    p = plan_budget(pilot, target_width=0.2)
    assert (p.n_unpriced_tasks, p.n_unpriced_trials) == (3, 14)
    assert "14 trial(s), 3 of 20 tasks, carry no dollars" in p.sentence
    c = plan_budget(pilot, cps_width=0.5, max_tasks=1000)
    assert c.n_unpriced_tasks == 3 and "cost per success from its 17 priced task(s)" in c.sentence
    assert "assumed to vary within its task" in c.sentence and c.cost_components.cost_spread == "assumed"
    few = {**pilot, "cost": {**pilot["cost"], "task_totals": {
        t: v for t, v in totals.items() if t in ("t3", "t4", "t5", "t6")}}}
    assert "its 4 priced tasks cannot pin down the spread of dollars" in plan_budget(
        few, cps_width=0.5, max_tasks=1000).sentence
    priced = plan_budget({**pilot, "cost": {**pilot["cost"], "task_totals": {
        f"t{i}": {"n": 4, "n_success": int(c_), "dollars": 0.04} for i, c_ in enumerate(counts)}}},
        target_width=0.2)
    assert priced.n_unpriced_tasks == 0 and "carry no dollars" not in priced.sentence


def test_a_few_pilots_deliver_on_fresh_tasks_of_their_population():
    r = assurance_bench.campaign(5.0, 1.0, pilots=5, runs=20, pairs=150, seed=11)
    s = assurance_bench.summary(r["assurance"])
    assert s["width_hit"] >= 0.8 and s["width_median"] >= 0.075, s
    assert s["power_hit"] >= 0.8, s


def _agent(task, *, seed):
    rng = random.Random(f"{task.task_id}/{seed}")
    ok = rng.random() < (0.3 if task.task_id in ("t1", "t4", "t7") else 0.8)
    cost = None if task.task_id in ("t10", "t11") else Cost(input_tokens=1000 + rng.randrange(500))
    return Episode(task.task_id, output=task.input.upper() if ok else "?", cost=cost)


def test_cli_plan_says_what_it_rests_on(tmp_path, capsys):
    from ek_agents import run_suite
    from ek_agents.suite import load_suite

    rows = [{"suite": {"name": "pilot", "version": "1"}}]
    rows += [{"task_id": f"t{i}", "input": f"w{i}", "gold": f"W{i}"} for i in range(12)]
    (tmp_path / "s.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    store = str(tmp_path / "store")
    rep = run_suite(_agent, load_suite(str(tmp_path / "s.jsonl")), k=3, seed=1, persist=True,
                    rootdir=store, price=per_million(1.0, 1.0))
    run_id = rep.detail["run_id"]
    assert main(["plan", run_id, "--width", "0.3", "--store", store]) == 0
    out = capsys.readouterr().out
    assert out.startswith("For a 95% interval 30.0 points wide on the success rate: run ")
    assert "6 trial(s), 2 of 12 tasks, carry no dollars" in out and "80% probability" in out
    assert main(["plan", run_id, "--width", "0.3", "--method", "plug-in", "--store", store]) == 0
    assert "planned at the pilot's point estimates" in capsys.readouterr().out


def test_within_task_cost_spread_against_a_direct_computation():
    from ek_agents.stats.pilotdraws import within_z_variances

    rng = np.random.default_rng(3)
    x = rng.lognormal(-3, 0.5, (6, 5))          # each trial's dollars, 6 tasks x 5 trials
    y = rng.random((6, 5)) < 0.6                # each trial's success
    r = x.sum() / y.sum()
    rows = [(x[i].sum(), int(y[i].sum()), 5, (x[i] ** 2).sum(), x[i][y[i]].sum()) for i in range(6)]
    got, how = within_z_variances(rows, r, 0.2, 0.5)
    assert how == "measured"
    assert got == pytest.approx(list((x - r * y).var(axis=1, ddof=1)), rel=1e-9)
    assumed, how = within_z_variances([row[:3] + (None, None) for row in rows], r, 0.2, 0.5)
    assert how == "assumed" and assumed[0] == pytest.approx(r * r * 0.2 + (0.5 * x[0].mean()) ** 2)
