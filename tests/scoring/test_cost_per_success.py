"""CostPerSuccessMetric: a ratio of sums, inf on no success, unknown cost never free."""
import math

import pytest

from ek_agents.base import Cost, Episode
from ek_agents.errors import InvalidInput
from ek_agents.scoring.metrics import CostPerSuccessMetric

cost_mod = pytest.importorskip("ek_agents.cost")


def _price():
    return cost_mod.per_million(1.0, 1.0)


def test_cost_per_success_ratio_of_sums():
    m = CostPerSuccessMetric(price=_price())
    assert not m.higher_is_better
    pairs = [(Episode(output="a", cost=Cost(input_tokens=1_000_000)), "a"),
             (Episode(output="b", cost=Cost(input_tokens=3_000_000)), "x"),
             (Episode(output="c", cost=Cost(input_tokens=2_000_000)), "c")]
    scores = [m.score(e, g) for e, g in pairs]
    assert [round(s.value, 6) for s in scores] == [1.0, 3.0, 2.0]
    assert m.aggregate(scores) == pytest.approx(6.0 / 2)  # not mean of per-episode ratios


def test_cost_per_success_inf_when_nothing_succeeds():
    m = CostPerSuccessMetric(price=_price())
    s = m.score(Episode(output="b", cost=Cost(input_tokens=10)), "x")
    assert m.aggregate([s]) == math.inf


def test_cost_per_success_unknown_cost_is_not_free():
    m = CostPerSuccessMetric(price=_price())
    known = m.score(Episode(output="a", cost=Cost(input_tokens=1_000_000)), "a")
    unknown = m.score(Episode(output="a"), "a")
    assert unknown.detail["dollars"] is None and math.isnan(unknown.value)
    with pytest.raises(InvalidInput, match="carry no Cost"):
        m.aggregate([known, unknown])
    skip = CostPerSuccessMetric(price=_price(), on_missing_cost="skip")
    assert skip.aggregate([known, unknown]) == pytest.approx(1.0)
    assert skip.last_skipped == 1


def test_cost_per_success_errored_episode_counts_dollars_not_success():
    m = CostPerSuccessMetric(price=_price())
    bad = Episode(output="a", cost=Cost(input_tokens=1_000_000), meta={"error": "X: y"})
    ok = Episode(output="a", cost=Cost(input_tokens=1_000_000))
    assert m.aggregate([m.score(bad, "a"), m.score(ok, "a")]) == pytest.approx(2.0)
