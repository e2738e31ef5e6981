"""Per-call billing (issue 25, point 3): an episode that records its model calls is billed call
by call, each call at the rates of the model that answered it; cost_report breaks the figures
down per model and marks an upper bound when a call did not report its cached tokens."""
import json
import math
import os
from pathlib import Path

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # before litellm is imported

import pytest

from ek_agents.base import Cost, Episode, ModelCall, RunProvenance
from ek_agents.cost import (call_dollars, cost_report, dollars, episode_dollars,
                            episode_dollars_by_model, per_million)
from ek_agents.errors import InvalidInput, UnknownModelPrice
from ek_agents.prices import load_prices

REPO = Path(__file__).resolve().parents[2]
SHARED_CATALOG = Path("/work/shared/data/litellm_model_prices.json")  # LiteLLM's real catalog

# LiteLLM's catalog rates, USD per token (examples/prices.json carries the same):
GPT4O = {"input": 2.5e-6, "cached_input": 1.25e-6, "output": 1e-5}
GPT4O_MINI = {"input": 1.5e-7, "cached_input": 7.5e-8, "output": 6e-7}


@pytest.fixture(scope="module")
def prices():
    return load_prices(REPO / "examples" / "prices.json")


def _planner_summariser(success=True, task="t1", cached_known=True):
    """A gpt-4o planner (two calls, the second reusing the prompt cache; OpenAI answers with the
    dated model) and a gpt-4o-mini summariser (one call)."""
    calls = [
        ModelCall("gpt-4o-2024-08-06", requested_model="gpt-4o", provider="openai",
                  input_tokens=1500, cached_input_tokens=1024, output_tokens=220),
        ModelCall("gpt-4o-2024-08-06", requested_model="gpt-4o", provider="openai",
                  input_tokens=2100, cached_input_tokens=1536, output_tokens=180),
        ModelCall("gpt-4o-mini", provider="openai", input_tokens=3000, output_tokens=400,
                  cached_known=cached_known),
    ]
    return Episode(task, cost=Cost.of_calls(calls, latency_s=2.0), success=success,
                   run=RunProvenance(model="gpt-4o"))


# by hand, from the rates above
PLANNER_1 = (1500 - 1024) * 2.5e-6 + 1024 * 1.25e-6 + 220 * 1e-5      # 0.00467
PLANNER_2 = (2100 - 1536) * 2.5e-6 + 1536 * 1.25e-6 + 180 * 1e-5      # 0.00513
SUMMARISER = 3000 * 1.5e-7 + 400 * 6e-7                                # 0.00069


def test_the_catalog_rates_are_litellms():
    for name, rates in (("gpt-4o", GPT4O), ("gpt-4o-mini", GPT4O_MINI)):
        entry = json.loads((REPO / "examples" / "prices.json").read_text())[name]
        assert (entry["input_cost_per_token"], entry["cache_read_input_token_cost"],
                entry["output_cost_per_token"]) == (rates["input"], rates["cached_input"], rates["output"])
        if SHARED_CATALOG.exists():  # the real catalog on the build machine (not committed)
            real = json.loads(SHARED_CATALOG.read_text())
            for model in (name, {"gpt-4o": "gpt-4o-2024-08-06",
                                 "gpt-4o-mini": "gpt-4o-mini-2024-07-18"}[name]):
                assert real[model]["input_cost_per_token"] == rates["input"]
                assert real[model]["cache_read_input_token_cost"] == rates["cached_input"]
                assert real[model]["output_cost_per_token"] == rates["output"]


def test_planner_and_summariser_are_each_billed_at_their_own_rates(prices):
    ep = _planner_summariser()
    parts = call_dollars(ep, prices=prices)
    assert [c.model for c, _ in parts] == ["gpt-4o-2024-08-06"] * 2 + ["gpt-4o-mini"]
    assert [d for _, d in parts] == pytest.approx([PLANNER_1, PLANNER_2, SUMMARISER], rel=1e-12)
    assert episode_dollars(ep, prices=prices) == pytest.approx(0.01049, rel=1e-12)
    assert episode_dollars_by_model(ep, prices=prices) == pytest.approx(
        {"gpt-4o-2024-08-06": PLANNER_1 + PLANNER_2, "gpt-4o-mini": SUMMARISER}, rel=1e-12)
    # what one-model billing would have charged: the whole tally at the episode's gpt-4o rates
    one_model = dollars(Cost(ep.cost.input_tokens, ep.cost.output_tokens,
                             cached_input_tokens=ep.cost.cached_input_tokens), "gpt-4o", prices=prices)
    assert one_model == pytest.approx(0.0213, rel=1e-12) and one_model > 2 * episode_dollars(ep, prices=prices)


def test_cost_report_breaks_dollars_and_tokens_down_per_model_each_call_once(prices):
    eps = [_planner_summariser(True, "t1"), _planner_summariser(False, "t2"),
           _planner_summariser(True, "t3")]
    r = cost_report(eps, prices=prices)
    assert r["total_dollars"] == pytest.approx(3 * 0.01049, rel=1e-12)
    assert r["cost_per_success"] == pytest.approx(3 * 0.01049 / 2, rel=1e-12)
    big, small = r["per_model"]["gpt-4o-2024-08-06"], r["per_model"]["gpt-4o-mini"]
    assert list(r["per_model"]) == ["gpt-4o-2024-08-06", "gpt-4o-mini"]  # largest spend first
    assert big == {"calls": 6, "episodes": 3, "input_tokens": 3 * 3600, "output_tokens": 3 * 400,
                   "cached_input_tokens": 3 * 2560, "reasoning_tokens": 0, "cache_write_tokens": 0,
                   "dollars": pytest.approx(3 * (PLANNER_1 + PLANNER_2), rel=1e-12), "upper_bound": False}
    assert (small["calls"], small["episodes"], small["input_tokens"], small["output_tokens"]) == (3, 3, 9000, 1200)
    assert small["dollars"] == pytest.approx(3 * SUMMARISER, rel=1e-12)
    # each call counted once: the per-model rows add up to the report's totals
    for k in ("input_tokens", "output_tokens", "cached_input_tokens"):
        assert big[k] + small[k] == r[k]
    assert math.fsum(m["dollars"] for m in r["per_model"].values()) == pytest.approx(r["total_dollars"], rel=1e-12)
    assert r["upper_bound"] is False and r["upper_bound_reason"] is None
    assert not any("UPPER BOUND" in w for w in r["warnings"])
    # unpriced: the breakdown keeps its tokens, dollars stay None (never invented)
    unpriced = cost_report(eps)
    assert unpriced["per_model"]["gpt-4o-mini"]["dollars"] is None
    assert unpriced["per_model"]["gpt-4o-mini"]["input_tokens"] == 9000


def test_a_call_without_cached_counts_makes_the_dollars_an_upper_bound_and_says_so(prices):
    eps = [_planner_summariser(True, "t1", cached_known=False), _planner_summariser(True, "t2")]
    assert eps[0].cost.cached_known is False and eps[1].cost.cached_known is True
    r = cost_report(eps, prices=prices)
    assert r["upper_bound"] is True
    assert r["per_model"]["gpt-4o-mini"]["upper_bound"] is True
    assert r["per_model"]["gpt-4o-2024-08-06"]["upper_bound"] is False
    assert "1 of 6 model call(s) did not report cached tokens (gpt-4o-mini: 1)" in r["upper_bound_reason"]
    assert r["upper_bound_reason"] in r["warnings"]
    # billed at the full input rate (no cached part to discount): the same figure, flagged
    assert r["total_dollars"] == pytest.approx(2 * 0.01049, rel=1e-12)


def test_episodes_without_calls_bill_and_report_exactly_as_before(prices):
    plain = [Episode("a", cost=Cost(1000, 100, cached_input_tokens=500), success=True,
                     run=RunProvenance(model="gpt-4o")),
             Episode("b", cost=Cost(2000, 10), success=False, meta={"model": "gpt-4o-mini"})]
    r = cost_report(plain, prices=prices)
    assert "per_model" not in r and "upper_bound" not in r  # the report document keeps its keys
    assert r["total_dollars"] == dollars(plain[0].cost, "gpt-4o", prices=prices) + \
        dollars(plain[1].cost, "gpt-4o-mini", prices=prices)
    # mixed with a per-call episode: the plain ones appear under their episode model
    mixed = cost_report(plain + [_planner_summariser(True, "c")], prices=prices)
    assert mixed["per_model"]["gpt-4o"] == {
        "calls": 0, "episodes": 1, "input_tokens": 1000, "output_tokens": 100,
        "cached_input_tokens": 500, "reasoning_tokens": 0, "cache_write_tokens": 0,
        "dollars": dollars(plain[0].cost, "gpt-4o", prices=prices), "upper_bound": False}
    assert mixed["per_model"]["gpt-4o-mini"]["calls"] == 1 and mixed["per_model"]["gpt-4o-mini"]["episodes"] == 2
    assert mixed["total_dollars"] == pytest.approx(r["total_dollars"] + 0.01049, rel=1e-12)


def test_a_call_whose_model_has_no_rates_is_a_typed_error_naming_it(prices):
    ep = Episode("t9", cost=Cost.of_calls([ModelCall("gpt-4o", input_tokens=10),
                                          ModelCall("my-finetune-7b", requested_model="ft:base",
                                                    input_tokens=10)]),
                 success=True, run=RunProvenance(model="gpt-4o"))
    with pytest.raises(UnknownModelPrice, match=r"task 't9', model call 1 \(answered by 'my-finetune-7b', "
                                                r"which asked for 'ft:base'\).*add the model to your price catalog"):
        episode_dollars(ep, prices=prices)
    with pytest.raises(UnknownModelPrice):
        cost_report([ep], prices=prices)
    with pytest.raises(KeyError):  # each error is also its builtin
        call_dollars(ep, prices=prices)
    # an explicit price= bills every call at it (as it bills an episode without calls)
    p = per_million(1.0, 1.0)
    assert episode_dollars(ep, price=p) == pytest.approx(20 / 1e6)
    assert cost_report([ep], price=p)["per_model"]["my-finetune-7b"]["dollars"] == pytest.approx(10 / 1e6)


def test_each_call_is_its_own_request_for_context_tiers_and_takes_the_service_tier():
    table = load_prices(REPO / "tests" / "stats" / "fixtures" / "prices_small.json")
    lc = table["long-context"]
    calls = [ModelCall("long-context", input_tokens=150_000, output_tokens=1_000) for _ in range(2)]
    ep = Episode("t", cost=Cost.of_calls(calls), success=True)
    # two 150k-token requests stay under the 200k tier; their 300k sum would not
    assert episode_dollars(ep, prices=table) == pytest.approx(2 * (150_000 * lc.input + 1_000 * lc.output))
    assert dollars(ep.cost, lc) > episode_dollars(ep, prices=table)
    # the episode's service tier applies to each call whose model has rates for it
    ex = load_prices(REPO / "examples" / "prices.json")
    pri = _planner_summariser().replace(meta={"service_tier": "priority"})
    want = sum(dollars(c, c.model, prices=ex, service_tier="priority") for c in pri.cost.calls)
    assert episode_dollars(pri, prices=ex) == pytest.approx(want, rel=1e-12)
    assert episode_dollars(pri, prices=ex, batch=True) == pytest.approx(
        sum(dollars(c, c.model, prices=ex, batch=True) for c in pri.cost.calls), rel=1e-12)


def test_the_bill_survives_the_json_round_trip(prices):
    ep = _planner_summariser(cached_known=False)
    back = Episode.from_json(ep.to_json())
    assert back == ep
    assert episode_dollars(back, prices=prices) == episode_dollars(ep, prices=prices)
    assert cost_report([back], prices=prices) == cost_report([ep], prices=prices)


def test_malformed_calls_are_refused_before_billing():
    with pytest.raises(InvalidInput, match="Cost.of_calls"):
        Cost(input_tokens=1, calls=(ModelCall("gpt-4o", input_tokens=2),))


# ----------------------------------------------------------------- LiteLLM, call by call

litellm = pytest.importorskip("litellm")

CALLS = [  # (model, prompt, completion, cached, cache_write, reasoning)
    ("gpt-4o", 1500, 220, 1024, 0, 0),
    ("gpt-4o-mini", 3000, 400, 0, 0, 0),
    ("gpt-4o-2024-08-06", 10_000, 500, 6_000, 0, 0),
    ("o3", 1_000, 5_000, 0, 0, 3_000),
    ("claude-haiku-4-5", 4_500, 200, 3_000, 500, 0),
    ("gemini/gemini-2.5-pro", 250_000, 1_000, 100_000, 0, 600),
]


def test_each_call_equals_litellm_cost_per_token(litellm_prices, litellm_usage):
    table = litellm_prices
    calls = [ModelCall(m, input_tokens=pt, output_tokens=ct, cached_input_tokens=cached,
                       cache_write_tokens=write, reasoning_tokens=reasoning)
             for m, pt, ct, cached, write, reasoning in CALLS]
    ep = Episode("t", cost=Cost.of_calls(calls), success=True)
    refs = []
    for m, pt, ct, cached, write, reasoning in CALLS:
        u = litellm_usage(pt, ct, cached, write, reasoning)
        refs.append(sum(litellm.cost_per_token(model=m, prompt_tokens=pt, completion_tokens=ct,
                                               usage_object=u)))
    ours = [d for _, d in call_dollars(ep, prices=table)]
    assert all(r > 0 for r in refs)
    assert ours == pytest.approx(refs, rel=1e-12, abs=1e-15)
    assert episode_dollars(ep, prices=table) == pytest.approx(math.fsum(refs), rel=1e-12)
    r = cost_report([ep], prices=table)
    assert {m: row["dollars"] for m, row in r["per_model"].items()} == pytest.approx(
        dict(zip([c[0] for c in CALLS], refs)), rel=1e-12, abs=1e-15)


def test_seeded_random_multi_model_runs_equal_litellm_call_by_call(litellm_prices, litellm_usage):
    """200 episodes of 1-6 calls each over models of LiteLLM's catalog, drawn with a seed:
    cost_report's total, per-model dollars and per-model tokens equal the sums of LiteLLM's
    cost_per_token over exactly the calls made (each counted once)."""
    import random

    table = litellm_prices
    models = ["gpt-4o", "gpt-4o-mini", "gpt-4.1-mini", "o3", "claude-haiku-4-5", "claude-sonnet-4-5"]
    rng = random.Random(20251204)
    eps, ref_total, ref_model, ref_tokens = [], [], {}, {}
    for i in range(200):
        calls = []
        for _ in range(rng.randint(1, 6)):
            m = rng.choice(models)
            pt, ct = rng.randint(1, 60_000), rng.randint(1, 4_000)
            cached = rng.randint(0, pt) if rng.random() < 0.5 else 0
            write = rng.randint(0, pt - cached) if m.startswith("claude") and rng.random() < 0.5 else 0
            reasoning = rng.randint(0, ct) if m == "o3" else 0
            calls.append(ModelCall(m, input_tokens=pt, output_tokens=ct, cached_input_tokens=cached,
                                   cache_write_tokens=write, reasoning_tokens=reasoning))
            d = sum(litellm.cost_per_token(model=m, prompt_tokens=pt, completion_tokens=ct,
                                           usage_object=litellm_usage(pt, ct, cached, write,
                                                                      reasoning)))
            ref_total.append(d)
            ref_model.setdefault(m, []).append(d)
            ref_tokens[m] = ref_tokens.get(m, 0) + pt + ct
        eps.append(Episode(f"t{i % 50}", cost=Cost.of_calls(calls), success=rng.random() < 0.6,
                           run=RunProvenance(model="gpt-4o")))
    r = cost_report(eps, prices=table, resamples=200)
    assert r["total_dollars"] == pytest.approx(math.fsum(ref_total), rel=1e-12)
    assert set(r["per_model"]) == set(ref_model)
    for m, row in r["per_model"].items():
        assert row["calls"] == len(ref_model[m])
        assert row["dollars"] == pytest.approx(math.fsum(ref_model[m]), rel=1e-12)
        assert row["input_tokens"] + row["output_tokens"] == ref_tokens[m]
    assert sum(row["calls"] for row in r["per_model"].values()) == len(ref_total)
    assert r["total_tokens"] == sum(ref_tokens.values())
