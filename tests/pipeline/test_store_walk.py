"""The store URL goes from the scoring tasks down to the store without climbing back up or
entering a module twice (issue 24; tests/pipeline/storewalk.py follows it)."""
from .storewalk import STORE, walk


def test_the_store_url_walks_down_from_the_scoring_tasks_to_the_store():
    w = walk()
    assert w["climbs"] == [], w["climbs"]  # each callee is an import dependency of its caller
    assert w["reentries"] == [], w["reentries"]  # no module twice on one path
    assert all(p[0] == "tasks.scoring" and p[-1] == STORE for p in w["paths"]), w["paths"]
    assert "ek_agents.stages.evaluate" in w["order"]  # the walk really went through the library
