"""dollars() equals LiteLLM's own cost_per_token / batch_cost_calculator, both sides reading
the same catalog (litellm's bundled model_cost, loaded with LITELLM_LOCAL_MODEL_COST_MAP)."""
import os

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # before litellm is imported

import pytest

litellm = pytest.importorskip("litellm")
from litellm.cost_calculator import batch_cost_calculator  # noqa: E402

from ek_agents import errors  # noqa: E402
from ek_agents.base import Cost  # noqa: E402
from ek_agents.cost import dollars, episode_dollars  # noqa: E402
from ek_agents.prices import load_prices  # noqa: E402

WORST: dict[str, float] = {}


@pytest.fixture(scope="module")
def table():
    return load_prices(litellm.model_cost)


# (label, model, prompt, completion, cached, cache_write, reasoning, service_tier, batch)
CASES = [
    ("plain", "gpt-4o", 1234, 567, 0, 0, 0, None, False),
    ("plain", "claude-haiku-4-5", 20_000, 900, 0, 0, 0, None, False),
    ("openai cached prompt", "gpt-4o", 10_000, 500, 6_000, 0, 0, None, False),
    ("openai cached prompt", "gpt-5", 10_000, 500, 9_000, 0, 0, None, False),
    ("anthropic cache read+write", "claude-haiku-4-5", 4_500, 200, 3_000, 500, 0, None, False),
    ("anthropic cache read+write", "claude-sonnet-4-5", 50_000, 2_000, 30_000, 15_000, 0, None, False),
    ("reasoning", "o3", 1_000, 5_000, 0, 0, 3_000, None, False),
    ("reasoning (own rate)", "dashscope/qwen-turbo", 3_000, 1_000, 0, 0, 500, None, False),
    ("priority", "o3", 8_000, 5_000, 2_000, 0, 3_000, "priority", False),
    ("priority", "gpt-5", 8_000, 500, 4_000, 0, 0, "priority", False),
    ("flex", "o3", 8_000, 5_000, 2_000, 0, 3_000, "flex", False),
    ("flex", "gpt-5", 8_000, 500, 4_000, 0, 0, "flex", False),
    ("batch", "gpt-4o", 3_000, 1_000, 0, 0, 0, None, True),
    ("batch", "gpt-5", 3_000, 1_000, 1_000, 0, 0, None, True),
    ("batch", "claude-haiku-4-5", 3_000, 1_000, 1_000, 500, 0, None, True),
    ("batch", "o3", 3_000, 1_000, 0, 0, 700, None, True),
    (">200k whole request", "gemini/gemini-2.5-pro", 250_000, 1_000, 0, 0, 0, None, False),
    (">200k whole request", "gemini/gemini-2.5-pro", 250_000, 1_000, 100_000, 0, 600, None, False),
    ("<=200k", "gemini/gemini-2.5-pro", 200_000, 1_000, 100_000, 0, 0, None, False),
    (">200k + priority", "gemini/gemini-2.5-pro", 250_000, 1_000, 100_000, 0, 0, "priority", False),
    (">200k + flex", "gemini/gemini-2.5-pro", 250_000, 1_000, 100_000, 0, 0, "flex", False),
    (">200k + batch", "gemini/gemini-2.5-pro", 250_000, 1_000, 50_000, 0, 0, None, True),
    (">272k whole request", "gpt-5.4", 300_000, 1_000, 10_000, 0, 500, None, False),
    (">272k + batch", "gpt-5.4", 300_000, 1_000, 0, 0, 0, None, True),
    ("tiered_pricing table", "dashscope/qwen3-coder-flash", 300_000, 1_000, 1_000, 0, 0, None, False),
]


@pytest.mark.parametrize("label,model,pt,ct,cached,write,reasoning,tier,batch", CASES,
                         ids=[f"{c[0]}:{c[1]}" for c in CASES])
def test_dollars_equal_litellm(table, litellm_usage, label, model, pt, ct, cached, write, reasoning,
                               tier, batch):
    u = litellm_usage(pt, ct, cached, write, reasoning)
    if batch:
        ref = sum(batch_cost_calculator(u, model))
    else:
        ref = sum(litellm.cost_per_token(model=model, prompt_tokens=pt, completion_tokens=ct,
                                         usage_object=u, service_tier=tier))
    ours = dollars(Cost(input_tokens=pt, output_tokens=ct, cached_input_tokens=cached,
                        cache_write_tokens=write, reasoning_tokens=reasoning),
                   model, prices=table, batch=batch, service_tier=tier)
    assert ref > 0
    WORST[label] = max(WORST.get(label, 0.0), abs(ours - ref))
    assert ours == pytest.approx(ref, rel=1e-12, abs=1e-15)


def test_anthropic_keyword_form_matches_when_prompt_includes_cache_tokens(table):
    # LiteLLM's Anthropic transform adds cache reads/writes INTO prompt_tokens before pricing;
    # cost_per_token(prompt_tokens=<Anthropic input_tokens>, cache_read_input_tokens=...) does not
    # (it bills the uncached tokens at $0 -- a LiteLLM quirk, see the report). Our Cost counts
    # input_tokens inclusively, so the inclusive call is the one to compare against.
    m, uncached, read, write = "claude-haiku-4-5", 1000, 3000, 500
    ref = sum(litellm.cost_per_token(model=m, prompt_tokens=uncached + read + write, completion_tokens=200,
                                     cache_read_input_tokens=read, cache_creation_input_tokens=write))
    ours = dollars(Cost(input_tokens=uncached + read + write, cached_input_tokens=read,
                        cache_write_tokens=write, output_tokens=200), m, prices=table)
    assert ours == pytest.approx(ref, rel=1e-12)
    quirk = sum(litellm.cost_per_token(model=m, prompt_tokens=uncached, completion_tokens=200,
                                       cache_read_input_tokens=read, cache_creation_input_tokens=write))
    assert quirk == pytest.approx(ours - uncached * table[m].input, rel=1e-12)


def test_batch_cache_reads_are_discounted_where_litellm_is_not(table, litellm_usage):
    # gpt-4o declares batch input/output rates but no batch cache-read rate: LiteLLM then bills
    # cache reads inside a batch at the full standard cache-read rate, yet halves them when a
    # model declares no batch rates at all. We apply DEFAULT_BATCH_DISCOUNT consistently.
    from ek_agents.cost import DEFAULT_BATCH_DISCOUNT

    p = table["gpt-4o"]
    assert p.batch_cached_input is None
    c = Cost(input_tokens=3000, cached_input_tokens=1000, output_tokens=1000)
    ours = dollars(c, p, batch=True)
    ref = sum(batch_cost_calculator(litellm_usage(3000, 1000, 1000), "gpt-4o"))
    assert ours == pytest.approx(2000 * p.batch_input + 1000 * p.cached_input * DEFAULT_BATCH_DISCOUNT
                                 + 1000 * p.batch_output)
    assert ref == pytest.approx(ours + 1000 * p.cached_input * (1 - DEFAULT_BATCH_DISCOUNT))


def test_service_tier_the_price_lacks_is_refused_in_dollars_but_standard_in_episodes(table):
    from ek_agents.base import Episode, RunProvenance

    c = Cost(input_tokens=100, output_tokens=10)
    with pytest.raises(errors.InvalidInput, match="declares no 'flex' rates"):
        dollars(c, "gpt-4o", prices=table, service_tier="flex")
    with pytest.raises(errors.InvalidInput, match="did you mean 'priority'"):
        dollars(c, "gpt-4o", prices=table, service_tier="priorty")
    assert dollars(c, "gpt-4o", prices=table, service_tier="default") == dollars(c, "gpt-4o", prices=table)
    assert dollars(c, "o3", prices=table, service_tier="fast") == dollars(c, "o3", prices=table,
                                                                          service_tier="priority")
    ep = Episode("t", cost=c, success=True, run=RunProvenance(model="gpt-4o"), meta={"service_tier": "flex"})
    assert episode_dollars(ep, prices=table) == dollars(c, "gpt-4o", prices=table)
    ep2 = ep.replace(meta={"service_tier": "priority"})
    assert episode_dollars(ep2, prices=table) == dollars(c, "gpt-4o", prices=table, service_tier="priority")


def test_zz_report_max_differences():
    print("\nMAX ABS DIFFERENCES vs LiteLLM (USD):", {k: f"{v:.3g}" for k, v in WORST.items()})
