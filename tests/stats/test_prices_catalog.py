"""load_prices / price_of on a small LiteLLM-format fixture and on the full catalog snapshot."""
import json
import pathlib

import pytest

from ek_agents import errors
from ek_agents.cost import ModelPrice, dollars, load_prices as cost_load_prices, price_of as cost_price_of
from ek_agents.prices import load_prices, price_of

HERE = pathlib.Path(__file__).parent
FIXTURE = HERE / "fixtures" / "prices_small.json"
SNAPSHOT = pathlib.Path(__file__).resolve().parents[3] / "shared" / "data" / "litellm_model_prices.json"


@pytest.fixture(scope="module")
def table():
    return load_prices(FIXTURE)


def test_reads_what_it_should_and_skips_the_rest(table):
    assert "sample_spec" not in table and "fallback_generalizations" not in table
    assert "image-maker" not in table and "speech-per-second" not in table
    assert "dangling-alias" not in table  # a non-numeric rate is an error: tests/fuzz/test_loaders.py
    assert table["text-embedder"].input == 1e-08  # token-priced embeddings are kept
    c = table["cachey"]
    assert (c.input, c.output, c.cached_input, c.cache_write) == (3e-06, 1.5e-05, 3e-07, 3.75e-06)
    assert (c.batch_input, c.batch_output, c.batch_cached_input, c.batch_cache_write) == \
        (1.5e-06, 7.5e-06, 1.5e-07, 1.875e-06)
    assert c.tiers == ()  # the 1-hour cache-write TTL rate is not a context tier
    t = table["thinker"]
    assert t.input == 2e-06 and t.reasoning == 1e-05  # a numeric string is read as a number
    assert t.service_tiers == {"priority": {"input": 3.5e-06, "output": 1.4e-05},
                               "flex": {"input": 1e-06, "output": 4e-06, "cached_input": 2.5e-07}}
    lc = table["long-context"]
    assert lc.tiers == ((200000.0, {"input": 2.5e-06, "output": 1.5e-05, "cached_input": 2.5e-07,
                                    "batch": {"input": 1.25e-06, "output": 7.5e-06}}),)


def test_aliases_resolve_to_their_target(table):
    assert table["cachey-alias"] is table["cachey"]
    assert table["cachey-latest"] is table["cachey"]


def test_absent_cache_rates_follow_litellm(table):
    p = table["plain-model"]
    r = p.rates()
    assert r["cached_input"] == p.input  # LiteLLM bills undeclared cache reads as input
    assert r["cache_write"] == p.input and r["reasoning"] == p.output
    # a hand-built price without a cached rate uses the documented discount instead
    from ek_agents.cost import DEFAULT_CACHE_DISCOUNT

    assert ModelPrice(1e-6, 2e-6).cached_rate == DEFAULT_CACHE_DISCOUNT * 1e-6


def test_tiered_pricing_tables_bill_the_whole_request_at_one_tier(table):
    from ek_agents.base import Cost

    p = table["tiered-table"]
    small = dollars(Cost(input_tokens=10_000, output_tokens=1000), p)
    big = dollars(Cost(input_tokens=50_000, cached_input_tokens=10_000, output_tokens=1000), p)
    assert small == pytest.approx(10_000 * 1e-07 + 1000 * 1e-06)
    assert big == pytest.approx(40_000 * 2e-07 + 10_000 * 5e-08 + 1000 * 2e-06)


def test_sources_path_url_and_mapping(table, tmp_path):
    raw = json.loads(FIXTURE.read_text())
    assert load_prices(raw) == table
    assert load_prices(str(FIXTURE)) == table
    assert load_prices(f"file://{FIXTURE}") == table
    import fsspec

    fs = fsspec.filesystem("memory")
    fs.pipe_file("/ek-prices-test/catalog.json", FIXTURE.read_bytes())
    assert load_prices("memory://ek-prices-test/catalog.json") == table
    with pytest.raises(errors.ArtifactNotFound, match="no such price catalog"):
        load_prices(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(errors.InvalidInput, match="not valid JSON"):
        load_prices(bad)
    # cost re-exports the same functions
    assert cost_load_prices is load_prices and cost_price_of is price_of


def test_price_of_resolution_and_actionable_errors(table):
    assert price_of("plain-model", prices=table) is table["plain-model"]
    assert price_of("openai/plain-model", prices=table) is table["plain-model"]  # strip prefix
    assert price_of("prefixed-only", prices=table) is table["openai/prefixed-only"]  # add prefix
    assert price_of("PLAIN-MODEL", prices=table) is table["plain-model"]
    with pytest.raises(errors.UnknownModelPrice, match="ambiguous.*azure/twice"):
        price_of("twice", prices=table)
    with pytest.raises(errors.UnknownModelPrice) as ei:
        price_of("plain-modle", prices=table)
    assert "plain-model" in str(ei.value) and "add the model to your price catalog" in str(ei.value)
    assert isinstance(ei.value, KeyError)
    with pytest.raises(errors.UnknownModelPrice, match="ships no price table"):
        price_of("plain-model")
    with pytest.raises(errors.UnknownModelPrice):
        dollars({"input_tokens": 1}, "nope", prices=table)


@pytest.mark.skipif(not SNAPSHOT.is_file(), reason="shared LiteLLM snapshot not beside this checkout")
def test_full_litellm_snapshot_loads():
    table = load_prices(SNAPSHOT)
    assert len(table) > 3000
    raw = json.loads(SNAPSHOT.read_text())
    assert "sample_spec" not in table and "fallback_generalizations" not in table
    aliases = [k for k, v in raw.items() if isinstance(v, dict) and "alias_of" in v]
    resolved = [a for a in aliases if a in table]
    assert resolved and all(table[a] is table[raw[a]["alias_of"]] for a in resolved)
    assert any(p.tiers for p in table.values()) and any(p.service_tiers for p in table.values())
