"""The >>> examples in the scoring modules run, and the benchmark's main() works on a small corpus."""
import doctest
import importlib

import pytest

MODULES = ["ek_agents.metrics", "ek_agents.toolcalls", "ek_agents.trajectory", "ek_agents.bfcl",
           "ek_agents.facades"]


@pytest.mark.parametrize("name", MODULES)
def test_module_doctests(name):
    mod = importlib.import_module(name)
    result = doctest.testmod(mod, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0
    assert result.failed == 0


def test_bench_main_returns_figures(capsys):
    bench = importlib.import_module("bench.bench_scoring")
    figs = bench.main(["--n", "200"])
    assert figs["episodes"] == 200
    for k in ("tool_call_s", "tool_call_vs_json", "trajectory_in_order_vs_eq", "baseline_json_s"):
        assert k in figs and figs[k] >= 0
    # half the episodes are perturbed, so scores are informative but not perfect
    assert 0.5 < figs["tool_call_aggregate"] < 1.0
    assert 0.0 < figs["trajectory_in_order_aggregate"] < 0.5
    assert "scoring 200 episodes" in capsys.readouterr().out


def test_bench_episodes_are_seeded():
    bench = importlib.import_module("bench.bench_scoring")
    assert bench.make_episodes(50, seed=3) == bench.make_episodes(50, seed=3)
    assert bench.make_episodes(50, seed=3) != bench.make_episodes(50, seed=4)
