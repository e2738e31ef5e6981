"""The regression gate: calibrated against simulated noise, and its refusals and messages."""
from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from ek_agents import stats
from ek_agents.base import RunProvenance
from ek_agents.errors import BaselineError, IncomparableRuns, InvalidInput
from ek_agents.gate import AgentGateResult
from ek_agents.execution.harness import (agent_regression_gate, load_agent_baseline,
                                         save_agent_baseline)
from ek_agents.reporting import reliability

N_SEEDS, N_TASKS, K = 400, 60, 4


def _run(p, seed, n=N_TASKS, k=K):
    rng = np.random.default_rng(seed)
    return reliability({f"t{i:02d}": [bool(x) for x in rng.random(k) < p] for i in range(n)},
                       k=k, seed=seed)


def _with(report, *, run=None, cost=None):
    detail = dict(report.detail)
    if run is not None:
        detail["run"] = run.to_dict()
    return dataclasses.replace(report, detail=detail, cost=report.cost if cost is None else cost)


def _counts(c, n):
    return reliability({f"t{i}": [i < c] for i in range(n)}, k=1)


def test_simulated_false_alarm_rate_and_power():
    """Two runs of one stochastic agent (p = 0.7, 60 tasks x k = 4) over 400 seeds.

    The runs cover the same task ids, so the paired tests run (success rate and pass^k by
    per-task differences). Measured: false alarms 11/400 = 2.75% (<= 5% required; the
    nominal family-wise level is 2.5%, and 400 pairs measure it +- 0.8%); with p dropping
    to 0.55 the gate fires in 355/400 = 88.75% of runs (power). (Here every task has the
    same p, so pairing has no shared difficulty to cancel; bench/bench_stats.py and
    tests/stats/test_honest_intervals.py simulate tasks that differ.) The power floor
    asserted below leaves room for changes to the bootstrap.
    """
    false_alarms = caught = 0
    for s in range(N_SEEDS):
        base = _run(0.70, 2 * s)
        same = _run(0.70, 2 * s + 1)
        worse = _run(0.55, 10_000 + s)
        false_alarms += not agent_regression_gate(same, base).passed
        caught += not agent_regression_gate(worse, base).passed
    false_alarm_rate, power = false_alarms / N_SEEDS, caught / N_SEEDS
    print(f"false-alarm rate {false_alarm_rate:.4f}, power at 0.70 -> 0.55: {power:.4f}")
    assert false_alarm_rate <= 0.05
    assert power >= 0.85


def test_interval_overlap_would_be_blind_where_the_gate_sees():
    # 60 tasks x k=1: 42/60 (70%) -> 24/60 (40%) is a real drop; the difference interval sees it
    base, cur = _counts(42, 60), _counts(24, 60)
    g = agent_regression_gate(cur, base)
    assert not g.passed and g.success_rate == 0.4 and g.success_rate_baseline == 0.7
    # the same 60 tasks: the paired test ran, at one-sided 2.5% (one check)
    pd = stats.paired_difference([1] * 24 + [0] * 36, [1] * 60, [1] * 42 + [0] * 18, [1] * 60)
    assert g.details["test"] == "paired" and g.details["checks"][0]["method"].startswith("paired")
    assert g.details["checks"][0]["ci"] == [pd.lower(0.025), pd.upper(0.025)]
    # forced unpaired: Newcombe's interval at the spec's z = 1.96
    u = agent_regression_gate(cur, base, paired=False)
    assert not u.passed and u.details["test"] == "unpaired"
    assert u.details["checks"][0]["ci"] == list(stats.newcombe_difference(24, 60, 42, 60))
    assert u.details["z"] == 1.96
    # the paired interval is the narrower one here (the same tasks failed in both runs)
    assert pd.upper(0.025) < u.details["checks"][0]["ci"][1]


def test_different_task_sets_fall_back_to_newcombe_and_paired_true_refuses():
    base = _counts(42, 60)
    cur = reliability({f"u{i}": [i < 24] for i in range(60)}, k=1)
    g = agent_regression_gate(cur, base)
    assert g.details["test"] == "unpaired" and g.details["checks"][0]["method"].startswith("Newcombe")
    with pytest.raises(InvalidInput, match="paired=True.*same tasks"):
        agent_regression_gate(cur, base, paired=True)
    # an old report document without per-task counts loads and gates unpaired
    old = base.to_dict()
    old.pop("per_task")
    old.pop("success_ci_method")
    assert agent_regression_gate(cur, old).details["test"] == "unpaired"


def test_reasons_are_sentences_with_metric_change_interval_threshold():
    g = agent_regression_gate(_counts(50, 100), _counts(90, 100), tolerance=0.05)
    assert not g.passed and len(g.reasons) == 1
    r = g.reasons[0]
    assert r.startswith("success rate: 90.0% -> 50.0% (change -40.0 pts, 95% CI [")
    assert "threshold -5.0 pts" in r and "real regression" in r
    assert not g.underpowered and g.hint is None and bool(g) is False


def test_noise_passes_and_tolerance_is_honoured():
    assert agent_regression_gate(_counts(89, 100), _counts(90, 100)).passed
    big = agent_regression_gate(_counts(800, 1000), _counts(900, 1000))
    assert not big.passed
    assert agent_regression_gate(_counts(800, 1000), _counts(900, 1000), tolerance=0.2).passed


def test_underpowered_warns_and_sizes_the_experiment():
    g = agent_regression_gate(_counts(11, 20), _counts(14, 20))
    assert g.passed and g.underpowered and g.reasons == ()
    assert g.warnings[0].startswith("underpowered: success rate got worse")
    chk = g.details["checks"][0]  # paired: sized from the measured paired variance
    n = stats.tasks_for_power(chk["se"], 20, 0.15, alpha=0.025, power=0.8)
    assert f"about {n} tasks x k=1 = {n} trials per run with the paired test" in g.hint
    assert "this run has 20 tasks" in g.hint and n > 20
    u = agent_regression_gate(_counts(11, 20), _counts(14, 20), paired=False)
    n = stats.trials_for_power(0.7, 0.55, alpha=0.025, power=0.8)
    assert f"about {n} trials per run" in u.hint and "this run has 20" in u.hint
    better = agent_regression_gate(_counts(15, 20), _counts(14, 20))
    assert better.passed and not better.underpowered and better.warnings == ()


def test_pass_hat_k_is_checked_for_k_above_one():
    base = reliability({f"t{i}": [True] * 4 for i in range(40)}, k=4, warn_deterministic=False)
    cur = reliability({f"t{i}": [True, True, True, i % 2 == 0] for i in range(40)}, k=4)
    g = agent_regression_gate(cur, base)
    metrics = [c["metric"] for c in g.details["checks"]]
    assert metrics == ["success rate", "pass^4"] and not g.passed
    assert any(r.startswith("pass^4: 100.0% -> 50.0%") for r in g.reasons)
    assert g.details["alpha_per_check"] == 0.0125  # two checks share the 2.5% budget
    assert g.pass_hat_k == 0.5 and g.pass_hat_k_baseline == 1.0
    mixed = agent_regression_gate(_counts(30, 40), base)
    assert [c["metric"] for c in mixed.details["checks"]] == ["success rate"]
    assert any("k=1" in w and "k=4" in w for w in mixed.warnings)


def test_cost_per_success_with_and_without_intervals():
    rep = _counts(80, 100)
    base = _with(rep, cost={"cost_per_success": 1.0, "cost_per_success_ci": [0.9, 1.1]})
    cur = _with(rep, cost={"cost_per_success": 1.5, "cost_per_success_ci": [1.35, 1.65]})
    g = agent_regression_gate(cur, base)
    assert not g.passed and g.cost_per_success == 1.5 and g.cost_per_success_baseline == 1.0
    assert g.reasons[0].startswith("cost per success: $1 -> $1.5 (change +50.0%")
    assert "lower bound is above the threshold +0.0%" in g.reasons[0]
    assert agent_regression_gate(cur, base, cost_tolerance=0.4).passed  # +50% +- ~20%: not > 40% surely
    near = _with(rep, cost={"cost_per_success": 1.05, "cost_per_success_ci": [0.9, 1.2]})
    g = agent_regression_gate(near, base)
    assert g.passed and g.underpowered  # dearer, but within the noise

    pb = _with(rep, cost={"cost_per_success": 1.0})
    assert not agent_regression_gate(_with(rep, cost={"cost_per_success": 1.2}), pb, cost_tolerance=0.1).passed
    ok = agent_regression_gate(_with(rep, cost={"cost_per_success": 1.2}), pb, cost_tolerance=0.25)
    assert ok.passed and "point estimates decide" in ok.details["checks"][-1]["sentence"]

    unpriced = agent_regression_gate(_with(rep, cost={"cost_per_success": None}), pb)
    assert unpriced.passed and any("no prices" in w for w in unpriced.warnings)
    inf = agent_regression_gate(_with(rep, cost={"cost_per_success": float("inf")}), pb)
    assert any("infinite" in w for w in inf.warnings)

    # a run billed call by call whose calls did not all report cached tokens: compared, and said
    bound = _with(rep, cost={"cost_per_success": 1.0, "upper_bound": True,
                             "upper_bound_reason": "1 of 3 model call(s) did not report cached tokens"})
    g = agent_regression_gate(bound, pb)
    assert g.passed and g.cost_per_success == 1.0
    assert [w for w in g.warnings if "upper bound" in w] == [
        "cost per success now is an upper bound, not an exact figure: 1 of 3 model call(s) did "
        "not report cached tokens"]
    assert not any("upper bound" in w for w in agent_regression_gate(pb, pb).warnings)


def test_incomparable_runs_are_refused():
    rep = _counts(8, 10)
    base = _with(rep, run=RunProvenance(model="m1", simulator="sim-v1", suite_version="1", scaffold="s"))
    for change in ({"simulator": "sim-v2"}, {"suite_version": "2"}, {"scaffold": "other"}):
        cur = _with(rep, run=dataclasses.replace(RunProvenance(model="m1", simulator="sim-v1",
                                                               suite_version="1", scaffold="s"), **change))
        with pytest.raises(IncomparableRuns, match=next(iter(change))) as err:
            agent_regression_gate(cur, base)
        assert isinstance(err.value, ValueError)
    other_model = _with(rep, run=RunProvenance(model="m2", seed=9, simulator="sim-v1",
                                               suite_version="1", scaffold="s"))
    assert agent_regression_gate(other_model, base).passed  # the model is what we compare
    with pytest.raises(IncomparableRuns):
        agent_regression_gate(rep, base)  # no provenance recorded now, but the baseline has one


def test_empty_and_malformed_baselines(tmp_path):
    empty = reliability({}, k=1)
    with pytest.raises(ValueError, match="permanent free pass"):
        save_agent_baseline(empty, "b", rootdir=tmp_path)
    with pytest.raises(BaselineError, match="zero trials"):
        agent_regression_gate(_counts(1, 2), {"report": empty.to_dict(), "run": None})
    for bad in ({"report": {"k": "many"}}, {"nothing": 1}, 42, {"report": _counts(1, 2).to_dict(),
                                                                  "run": {"seed": "x"}}):
        with pytest.raises(BaselineError):
            agent_regression_gate(_counts(1, 2), bad)
    with pytest.raises(BaselineError, match="no baseline named 'ghost'"):
        agent_regression_gate(_counts(1, 2), "ghost", rootdir=tmp_path)
    with pytest.raises(InvalidInput):
        agent_regression_gate(_counts(1, 2), _counts(1, 2), tolerance=-1)
    with pytest.raises(InvalidInput, match="nothing|zero"):
        agent_regression_gate(empty, _counts(1, 2))


def test_baseline_round_trip_and_gate_by_name(store_url):
    rep = _with(_counts(45, 50), run=RunProvenance(seed=3, model="m", simulator="sim"))
    doc = save_agent_baseline(rep, "main", rootdir=store_url)
    assert doc["run"]["simulator"] == "sim" and doc["report"]["n_trials"] == 50
    assert load_agent_baseline("main", rootdir=store_url) == doc
    assert load_agent_baseline("other", rootdir=store_url) is None
    worse = _with(_counts(20, 50), run=RunProvenance(seed=4, model="m", simulator="sim"))
    assert not agent_regression_gate(worse, "main", rootdir=store_url).passed
    assert agent_regression_gate(rep, doc).passed
    assert agent_regression_gate(rep.to_dict(), doc["report"]).passed  # plain dicts work too
    with pytest.raises(InvalidInput):
        save_agent_baseline(rep, "../escape", rootdir=store_url)


def test_result_round_trips_through_json():
    from ek_agents.store import canonical_json

    g = agent_regression_gate(_counts(11, 20), _counts(14, 20))
    assert AgentGateResult.from_dict(g.to_dict()) == g
    rep = _counts(8, 10)
    inf = agent_regression_gate(_with(rep, cost={"cost_per_success": float("inf")}),
                                _with(rep, cost={"cost_per_success": 2.0}))
    assert inf.cost_per_success == float("inf")
    assert AgentGateResult.from_dict(json.loads(canonical_json(inf))) == inf
    # an infinity inside the untyped details survives too (pydantic's JSON mode would null it)
    deep = AgentGateResult(details={"checks": [{"value": float("inf")}]})
    assert AgentGateResult.from_dict(json.loads(canonical_json(deep))) == deep


def test_a_single_flake_against_a_perfect_baseline_is_not_a_regression():
    # the spec's first wrong shortcut: comparing to the baseline's point would fail this
    perfect = reliability({f"t{i}": [True] * 4 for i in range(60)}, k=4, warn_deterministic=False)
    flake = reliability({f"t{i}": [True] * 4 if i else [True, True, True, False] for i in range(60)}, k=4)
    g = agent_regression_gate(flake, perfect)
    assert g.passed and g.underpowered
    assert [c["metric"] for c in g.details["checks"]] == ["success rate", "pass^4"]
