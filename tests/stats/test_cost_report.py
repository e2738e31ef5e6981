"""ModelPrice, per_million, cost_of_pass, episode_dollars and cost_report."""
import json
import math

import numpy as np
import pytest

from ek_agents import errors
from ek_agents.base import Cost, Episode, RunProvenance
from ek_agents.cost import (DEFAULT_BATCH_DISCOUNT, ModelPrice, cost_of_pass, cost_report, dollars,
                            episode_dollars, per_million)

ONE_DOLLAR = per_million(1.0, 1.0)
MTOK = Cost(input_tokens=1_000_000)  # $1 at ONE_DOLLAR


def _ep(task, ok, cost=MTOK, model="", **meta):
    return Episode(task, cost=cost, success=ok, run=RunProvenance(model=model) if model else None,
                   meta=meta)


def test_spec_examples():
    p = per_million(3.0, 15.0)
    assert (round(p.input, 9), round(p.output, 9)) == (3e-06, 1.5e-05)
    assert cost_of_pass(10.0, 4) == 2.5 and cost_of_pass(10.0, 0) == math.inf
    eps = [_ep("a", True), _ep("b", False)]
    r = cost_report(eps, price=ONE_DOLLAR)
    assert r["success_rate"] == 0.5 and round(r["cost_per_success"], 2) == 2.0
    assert cost_report(eps)["cost_per_success"] is None


def test_each_token_is_billed_once_at_its_kinds_rate():
    p = ModelPrice(input=1.0, output=10.0, cached_input=0.1, cache_write=1.25, reasoning=20.0)
    c = Cost(input_tokens=100, cached_input_tokens=30, cache_write_tokens=20,
             output_tokens=50, reasoning_tokens=10)
    assert dollars(c, p) == pytest.approx(50 * 1.0 + 30 * 0.1 + 20 * 1.25 + 40 * 10.0 + 10 * 20.0)
    assert dollars(c.to_dict(), p) == dollars(c, p)  # the dict form works too
    b = dollars(Cost(input_tokens=100, output_tokens=50), p, batch=True)
    assert b == pytest.approx((100 * 1.0 + 50 * 10.0) * DEFAULT_BATCH_DISCOUNT)


def test_context_tier_bills_the_whole_request():
    p = ModelPrice(input=1e-6, output=1e-5, tiers=((200_000, {"input": 2e-6, "output": 1.5e-5}),))
    below = dollars(Cost(input_tokens=200_000, output_tokens=1000), p)
    above = dollars(Cost(input_tokens=200_001, output_tokens=1000), p)
    assert below == pytest.approx(0.2 + 0.01)
    assert above == pytest.approx(200_001 * 2e-6 + 1000 * 1.5e-5)  # every token at the tier rate


def test_model_price_validation_and_round_trip():
    with pytest.raises(errors.InvalidInput, match="finite rate >= 0"):
        ModelPrice(input=-1.0)
    with pytest.raises(errors.InvalidInput, match="unknown service tier 'priorty'.*did you mean"):
        ModelPrice(service_tiers={"priorty": {"input": 1.0}})
    with pytest.raises(errors.InvalidInput, match="unknown key 'inptu'"):
        ModelPrice(service_tiers={"flex": {"inptu": 1.0}})
    with pytest.raises(errors.InvalidInput, match="increasing"):
        ModelPrice(tiers=((5, {"input": 1.0}), (5, {"input": 2.0})))
    with pytest.raises(errors.InvalidInput, match="batch or service tier"):
        ModelPrice(service_tiers={"flex": {"input": 1.0}}).rates(batch=True, service_tier="flex")
    p = ModelPrice(input=1e-6, output=2e-6, cached_input=1e-7, service_tiers={"flex": {"input": 5e-7}},
                   tiers=((1000, {"input": 2e-6, "batch": {"input": 1e-6}}),), cache_discount=1.0)
    back = ModelPrice.from_dict(json.loads(json.dumps(p.to_dict())))
    assert back == p


def test_episode_dollars_unknown_cost_is_none_not_zero():
    assert episode_dollars(Episode("t", success=True), price=ONE_DOLLAR) is None
    assert episode_dollars(_ep("t", True), price=ONE_DOLLAR) == pytest.approx(1.0)
    prices = {"m": ONE_DOLLAR}
    assert episode_dollars(_ep("t", True, model="m"), prices=prices) == pytest.approx(1.0)
    assert episode_dollars(Episode("t", cost=MTOK, meta={"model": "m"}), prices=prices) == pytest.approx(1.0)
    with pytest.raises(errors.InvalidInput, match="records no model"):
        episode_dollars(_ep("t", True), prices=prices)
    with pytest.raises(errors.UnknownModelPrice, match="'zz'"):
        episode_dollars(_ep("t", True, model="zz"), prices=prices)


def test_pooled_and_per_task_cost_of_pass_erol_example():
    # 2 tasks x 2 trials at $1 each; task a 2/2, task b 1/2
    eps = [_ep("a", True), _ep("a", True), _ep("b", True), _ep("b", False)]
    r = cost_report(eps, price=ONE_DOLLAR, per_task=True)
    assert r["cost_per_success"] == pytest.approx(4 / 3)  # pooled: $4 / 3 successes = $1.33
    assert round(r["cost_per_success"], 2) == 1.33
    assert r["cost_per_success_per_task"] == pytest.approx(1.5)  # Erol: mean($1, $2) = $1.50
    assert r["per_task"]["b"] == {"n": 2, "n_success": 1, "dollars": pytest.approx(2.0),
                                  "cost_per_success": pytest.approx(2.0)}
    never = cost_report(eps + [_ep("c", False)], price=ONE_DOLLAR, per_task=True)
    assert never["cost_per_success_per_task"] == math.inf
    assert "cost_per_success_per_task" not in cost_report(eps, price=ONE_DOLLAR)


def test_no_prices_means_no_dollars_but_tokens_and_latency():
    eps = [_ep("a", True, Cost(input_tokens=10, output_tokens=5, latency_s=2.0)),
           _ep("b", False, Cost(input_tokens=20, output_tokens=5, reasoning_tokens=3, latency_s=4.0))]
    r = cost_report(eps)
    assert r["total_dollars"] is None and r["cost_per_success"] is None
    assert r["cost_per_success_ci"] is None and r["mean_dollars"] is None
    assert r["total_tokens"] == 40 and r["reasoning_tokens"] == 3 and r["mean_latency_s"] == 3.0
    assert any("no price" in w for w in r["warnings"])


def test_episodes_without_cost_are_counted_and_left_out():
    eps = [_ep("a", True), _ep("b", False), Episode("c", success=True)]
    r = cost_report(eps, price=ONE_DOLLAR)
    assert r["n"] == 3 and r["n_success"] == 2 and r["n_without_cost"] == 1
    assert r["total_dollars"] == pytest.approx(2.0)
    assert r["cost_per_success"] == pytest.approx(2.0)  # the uncosted success is not free evidence
    assert any("carry no Cost" in w for w in r["warnings"])
    with pytest.raises(errors.InvalidInput, match="ungraded"):
        cost_report([Episode("x", cost=MTOK)], price=ONE_DOLLAR)


def test_cost_per_success_ci_is_a_seeded_task_cluster_bootstrap():
    rng = np.random.default_rng(0)
    eps = [_ep(f"t{i}", bool(rng.random() < 0.6), Cost(input_tokens=int(rng.integers(1e5, 3e6))))
           for i in range(60) for _ in range(3)]
    a = cost_report(eps, price=ONE_DOLLAR, seed=3)
    assert a["cost_per_success_ci"] == cost_report(eps, price=ONE_DOLLAR, seed=3)["cost_per_success_ci"]
    assert a["cost_per_success_ci"] != cost_report(eps, price=ONE_DOLLAR, seed=4)["cost_per_success_ci"]
    lo, hi = a["cost_per_success_ci"]
    assert lo < a["cost_per_success"] < hi and a["seed"] == 3
    assert a["cost_per_success_ci_method"].startswith("bootstrap-t over tasks")
    assert a["task_totals"]["t0"]["n"] == 3
    # independent check: a plain loop over resamples of whole tasks, studentized by hand
    tids = list(a["task_totals"])
    d = np.array([sum(e.cost.input_tokens / 1e6 for e in eps if e.task_id == t) for t in tids])
    s = np.array([sum(float(e.success) for e in eps if e.task_id == t) for t in tids])
    g, r = len(tids), d.sum() / s.sum()

    def se(dd, ss):
        rr = dd.sum() / ss.sum()
        return np.sqrt(g / (g - 1) * ((dd - rr * ss) ** 2).sum()) / ss.sum()

    gen = np.random.default_rng(3)
    ts = []
    for _ in range(2000):
        i = gen.integers(0, g, size=g, dtype=np.int32)
        ts.append((d[i].sum() / s[i].sum() - r) / se(d[i], s[i]))
    t_lo, t_hi = np.percentile(ts, [2.5, 97.5])
    assert (lo, hi) == pytest.approx((r - t_hi * se(d, s), r - t_lo * se(d, s)), rel=1e-9)
    # one trial per task: the task bootstrap resamples episodes
    one = cost_report(eps[::3], price=ONE_DOLLAR, seed=3)
    assert all(t["n"] == 1 for t in one["task_totals"].values())


def test_all_failures_cost_infinity_and_the_report_is_json_safe_via_reliability():
    from ek_agents.reporting import ReliabilityReport, reliability

    eps = [_ep("a", False), _ep("a", False)]
    r = cost_report(eps, price=ONE_DOLLAR)
    assert r["cost_per_success"] == math.inf and r["cost_per_success_ci"] == [math.inf, math.inf]
    rep = reliability(eps, k=2, cost=r, warn_deterministic=False)
    back = ReliabilityReport.from_dict(json.loads(json.dumps(rep.to_dict(), allow_nan=False)))
    assert back.cost["cost_per_success"] == math.inf


def test_catalog_prices_by_episode_model_and_memoises():
    prices = {"openai/m1": per_million(1.0, 0.0), "m2": per_million(2.0, 0.0)}
    eps = [_ep("a", True, model="m1"), _ep("b", True, model="openai/m2")]
    r = cost_report(eps, prices=prices)
    assert r["total_dollars"] == pytest.approx(3.0)
    with pytest.raises(errors.UnknownModelPrice):
        cost_report([_ep("a", True, model="m3")], prices=prices)


def test_cost_of_pass_rejects_nonsense():
    assert cost_of_pass(None, 3) is None
    with pytest.raises(errors.InvalidInput):
        cost_of_pass(1.0, -1)
    with pytest.raises(errors.InvalidInput):
        cost_of_pass(-1.0, 1)
