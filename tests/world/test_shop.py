"""The shop world: tools, ShopEnv, the bundled suite, the example agents and the price file."""
from __future__ import annotations

import copy
import doctest
import hashlib
import json
import pathlib
import statistics

import pytest

from ek_agents.base import Episode, Step, Trajectory
from ek_agents.scoring.metrics import final_state_match, grade
from ek_agents.stats import newcombe_difference
from ek_agents.suite import load_suite
from examples.shop import agents as agents_mod
from examples.shop import build_suite, world
from examples.shop.agents import degraded_agent, large_agent, oracle_agent, small_agent
from examples.shop.world import SUITE_PATH, ShopEnv, extract_answer, load_db

ROOT = pathlib.Path(__file__).resolve().parents[2]
PRICES = ROOT / "examples" / "prices.json"
SNAPSHOT = ROOT.parent / "shared" / "data" / "litellm_model_prices.json"


@pytest.fixture(scope="module")
def suite():
    return load_suite(SUITE_PATH)


# --------------------------------------------------------------------------- the world

def test_tools_are_pure_and_refusals_are_observations():
    db = load_db()
    before = copy.deepcopy(db)
    new, obs = world.cancel_order(db, order_id="O1004", reason="duplicate")
    assert db == before and new["orders"]["O1004"]["status"] == "cancelled" and obs["status"] == "cancelled"
    env = ShopEnv()
    step = env.step("cancel_order", {"order_id": "O1003", "reason": "duplicate"})  # shipped
    assert isinstance(step, Step) and "only pending or processing" in step.error
    assert step.observation == {"error": step.error}
    assert env.step("get_order", {"order_id": "O9999"}).error == "order O9999 not found"
    assert "unexpected argument" in env.step("get_order", {"order_id": "O1001", "x": 1}).error
    assert "missing required" in env.step("refund_order", {"order_id": "O1001"}).error
    assert "unknown tool" in env.step("delete_everything", {}).error
    assert "exceeds the refundable balance" in env.step(
        "refund_order", {"order_id": "O1012", "amount": 200.0}).error  # 199.99 left
    assert env.changes() == {} and env.final_state() == {"db": {}, "answer": None}
    assert len(env.steps) == 6 and env.state == load_db()


def test_refunds_and_address_changes_show_in_the_final_state():
    env = ShopEnv()
    env.call("refund_order", {"order_id": "O1009", "amount": 24.99})
    env.call("update_address", {"order_id": "O1002", "street": "1 A St", "city": "B", "zip": "9"})
    ch = env.changes()
    assert sorted(ch) == ["orders"] and sorted(ch["orders"]) == ["O1002", "O1009"]
    assert ch["orders"]["O1009"]["refunded"] == 24.99 and ch["orders"]["O1009"]["status"] == "delivered"
    env.call("refund_order", {"order_id": "O1009", "amount": 124.23})  # the rest: fully refunded
    assert env.changes()["orders"]["O1009"]["status"] == "refunded"


def test_answers_are_read_from_free_text():
    assert extract_answer("status", "Your order O1002 is processing.") == "processing"
    assert extract_answer("status", "no idea") is None
    assert extract_answer("amount", "It cost $308.90 (order O1008).") == 308.9
    assert extract_answer("email", "Write to Eli.Haddad@example.com") == "eli.haddad@example.com"
    assert extract_answer(None, "anything") is None
    with pytest.raises(ValueError, match="unknown answer kind"):
        extract_answer("colour", "red")


def test_module_doctests():
    for mod in (world, agents_mod):
        res = doctest.testmod(mod)
        assert res.attempted > 0 and res.failed == 0, mod.__name__


# --------------------------------------------------------------------------- the suite

def test_bundled_suite_shape(suite):
    assert (suite.name, suite.version, suite.checker) == ("shop", world.SUITE_VERSION, "final_state")
    assert len(suite) >= 20 and set(suite.slices) == {"lookup", "modify", "refund"}
    for slc in suite.slices:
        assert sum(t.slice == slc for t in suite) >= 6
    t = suite.task("refund-02")
    g = t.grammar()
    assert g.field_cost("refund_order", "amount") == 20.0 and g.node_cost("refund_order") == 10.0
    assert g.field_cost("get_order", "order_id") == 2.0 and g.node_cost("get_order") == 1.0
    assert all(t.checker == "final_state" and t.value > 0 for t in suite)
    for t in suite:  # read-only questions: an answer AND an untouched database
        if t.slice == "lookup":
            assert t.gold["final_state"]["db"] == {} and t.gold["final_state"]["answer"] is not None
        else:
            assert t.gold["final_state"]["answer"] is None
    assert sum(bool(t.gold["final_state"]["db"]) for t in suite) >= 12


def test_suite_file_is_what_the_builder_writes(tmp_path):
    out = tmp_path / "suite.yaml"
    digest = build_suite.main(str(out))
    assert out.read_bytes() == SUITE_PATH.read_bytes(), "run `python -m examples.shop.build_suite`"
    assert digest == hashlib.sha256(SUITE_PATH.read_bytes()).hexdigest()


def test_every_goal_is_reachable_by_the_right_plan(suite):
    eps = [oracle_agent(t, seed=0) for t in suite]
    graded = grade(eps, suite.by_id())
    assert all(e.success for e in graded)
    # a do-nothing agent passes only the tasks whose right move is to refuse (policy traps)
    idle = [t.task_id for t in suite
            if final_state_match(Episode(t.task_id, final_state=ShopEnv(task=t).final_state("")), t.gold)]
    assert idle == ["modify-07", "refund-08"]


# --------------------------------------------------------------------------- the agents

def test_agents_are_deterministic_and_seed_sensitive(suite):
    t = suite.task("modify-05")
    a, b = small_agent(t, seed=3), small_agent(t, seed=3)
    assert a == b and a.to_json() == b.to_json()
    runs = {small_agent(t, seed=s).to_json() for s in range(12)}
    assert len(runs) > 3
    e = large_agent(t, seed=5)
    assert e.run.seed == 5 and e.run.scaffold == "examples-shop-v1" and e.run.simulator == "none"
    assert e.run.suite_version == suite.version and e.run.model == "gpt-4o-2024-08-06"
    assert e.trajectory.tools[0] in world.TOOLS and Episode.from_json(e.to_json()) == e


def _rates(agent, suite, seeds):
    ok = [final_state_match(agent(t, seed=s), t.gold) for s in seeds for t in suite]
    return sum(ok), len(ok)


@pytest.mark.parametrize("agent, lo, hi", [
    (small_agent, 0.50, 0.72), (large_agent, 0.78, 0.95), (degraded_agent, 0.25, 0.45),
])
def test_success_rates_lie_in_their_bands(suite, agent, lo, hi):
    c, n = _rates(agent, suite, range(8))
    assert lo <= c / n <= hi, (agent, c / n)


def test_a_gate_over_24_tasks_and_k4_tells_them_apart(suite):
    small, large, bad = (_rates(a, suite, range(100, 104)) for a in (small_agent, large_agent, degraded_agent))
    lo, _ = newcombe_difference(large[0], large[1], small[0], small[1])
    assert lo > 0, (large, small)
    lo, _ = newcombe_difference(small[0], small[1], bad[0], bad[1])
    assert lo > 0, (small, bad)


def _dollars(cost, rate):
    fresh = cost.input_tokens - cost.cached_input_tokens
    return (fresh * rate["input_cost_per_token"] + cost.cached_input_tokens * rate["cache_read_input_token_cost"]
            + cost.output_tokens * rate["output_cost_per_token"])


def test_token_usage_is_realistic_and_priced(suite):
    rates = json.loads(PRICES.read_text())
    mean = {}
    for agent in (small_agent, large_agent, degraded_agent):
        eps = [agent(t, seed=s) for s in range(3) for t in suite]
        for e in eps:
            c = e.cost
            assert c.input_tokens >= 1150 * (len(e.trajectory) + 1) and c.cached_input_tokens <= c.input_tokens
            assert c.output_tokens > 0 and c.latency_s > 0
        assert any(e.cost.cached_input_tokens > 0 for e in eps)
        long = [e.cost.input_tokens for e in eps if len(e.trajectory) >= 4]
        short = [e.cost.input_tokens for e in eps if len(e.trajectory) <= 1]
        assert statistics.mean(long) > 3 * statistics.mean(short)  # prompts grow with the steps
        mean[agent.name] = statistics.mean(_dollars(e.cost, rates[e.run.model]) for e in eps)
    assert 0.0002 < mean["small_agent"] < 0.002 and 0.003 < mean["large_agent"] < 0.03
    assert mean["large_agent"] > 8 * mean["small_agent"]


def test_price_file_matches_published_rates_and_loads():
    rates = json.loads(PRICES.read_text())
    models = {a.profile.model for a in (small_agent, large_agent, degraded_agent)}
    assert models <= set(rates)
    assert rates["gpt-4o-mini-2024-07-18"]["input_cost_per_token"] == pytest.approx(0.15e-6)
    assert rates["gpt-4o-mini-2024-07-18"]["output_cost_per_token"] == pytest.approx(0.60e-6)
    assert rates["gpt-4o-2024-08-06"]["input_cost_per_token"] == pytest.approx(2.50e-6)
    assert rates["gpt-4o-2024-08-06"]["cache_read_input_token_cost"] == pytest.approx(1.25e-6)
    if SNAPSHOT.is_file():  # the shared LiteLLM snapshot, where it sits beside the checkout
        snap = json.loads(SNAPSHOT.read_text())
        for model, card in rates.items():
            for key, value in card.items():
                assert snap[model][key] == value, (model, key)
    prices = pytest.importorskip("ek_agents.prices")
    table = prices.load_prices(PRICES)
    assert models <= set(table)


def test_agents_refuse_tasks_without_a_plan():
    from ek_agents.base import TaskSpec
    from ek_agents.errors import InvalidInput

    with pytest.raises(InvalidInput, match="no gold 'calls'"):
        small_agent(TaskSpec("x", "hi", gold="HI"), seed=0)


def test_without_a_seed_one_is_drawn_and_recorded(suite):
    t = suite.task("refund-03")
    eps = [small_agent(t) for _ in range(6)]
    seeds = {e.run.seed for e in eps}
    assert None not in seeds and len(seeds) == 6
    assert all(small_agent(t, seed=e.run.seed) == e for e in eps)  # replayable from the record


def test_argument_importances_reach_the_tool_call_metric(suite):
    from ek_agents.scoring.toolcalls import ToolCallMetric

    t = suite.task("refund-02")
    m = ToolCallMetric()
    right = m.score(oracle_agent(t, seed=0), t.gold, grammar=t.grammar()).value
    env = ShopEnv(task=t)
    env.call("get_order", {"order_id": "O1009"})
    env.call("refund_order", {"order_id": "O1009", "amount": 74.97})   # all three hubs, not one
    wrong_amount = Episode(t.task_id, trajectory=Trajectory(tuple(env.steps)))
    env = ShopEnv(task=t)
    env.call("get_order", {"order_id": "O1008"})                       # a wrong id on a read
    env.call("refund_order", {"order_id": "O1009", "amount": 24.99})
    wrong_read = Episode(t.task_id, trajectory=Trajectory(tuple(env.steps)))
    s_amount = m.score(wrong_amount, t.gold, grammar=t.grammar()).value
    s_read = m.score(wrong_read, t.gold, grammar=t.grammar()).value
    assert right == 1.0 and s_amount < s_read < 1.0  # a wrong refund amount (importance 20) costs most
