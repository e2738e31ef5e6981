"""The >>> examples in the scoring modules run, and the benchmark's main() works on a small corpus."""
import doctest
import importlib

import pytest

MODULES = ["ek_agents.scoring.metrics", "ek_agents.scoring.toolcalls", "ek_agents.scoring.trajectory", "ek_agents.scoring.bfcl",
           "ek_agents.scoring.facades"]


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


def test_bench_toolcalls_says_why_a_comparison_is_skipped(capsys, monkeypatch):
    monkeypatch.delenv("EK_BENCH_COMPARE_PYTHON", raising=False)
    figs = importlib.import_module("bench.bench_toolcalls").main(["--n", "50", "--repeat", "1"])
    assert figs["tool_call_call_per_episode_s"] > 0 and figs["tool_call_arg_batch_s"] > 0
    assert "EK_BENCH_COMPARE_PYTHON" in figs["agentevals_strict_skipped"]
    assert "agentevals_strict_vs_ek" not in figs
    assert "deepeval_tool_correctness" in capsys.readouterr().out


def test_bench_in_order_row_checks_every_pair():
    bench = importlib.import_module("bench.bench_scoring")
    preds, golds = bench.make_episodes(300)
    figs = bench.in_order_vs_rapidfuzz(preds, golds, repeat=1)
    assert figs["in_order_pairs_differing"] == 0
    assert figs["in_order_evaluate_vs_rapidfuzz"] > 0


def test_bench_bootstrap_and_ingest_run_small(capsys):
    figs = importlib.import_module("bench.bench_bootstrap").main(["--n", "200", "--resamples", "50", "--repeat", "1"])
    lo, hi = figs["cost_per_success_ci"]
    assert 0 < lo <= hi
    figs = importlib.import_module("bench.bench_ingest").main(["--mb", "0.3", "--repeat", "1"])
    for kind in ("inspect_json", "inspect_eval", "tau_bench"):
        assert figs[f"{kind}_mb"] >= 0.3 and figs[f"{kind}_ingest_vs_orjson"] > 0
