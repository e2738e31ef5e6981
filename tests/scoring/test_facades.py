"""score / evaluate / estimate_quality."""
import pytest

import ek_agents
from ek_agents.base import Episode, ToolSpec, tool_grammar
from ek_agents.core import FieldSpec
from ek_agents.errors import InvalidInput, UnknownName
from ek_agents.scoring.facades import estimate_quality, evaluate, get_metric, score
from ek_agents.scoring.metrics import TaskSuccessMetric
from ek_agents.scoring.toolcalls import ToolCallMetric
from ek_agents.scoring.trajectory import TrajectoryMetric


def test_public_facade_names():
    assert ek_agents.score is score and ek_agents.evaluate is evaluate
    assert ek_agents.estimate_quality is estimate_quality


def test_score_passes_grammar_through():
    g = tool_grammar(ToolSpec("rm", {"path": FieldSpec("path", required=True)}, destructive=True))
    s = score([("rm", {"path": "/a"})], [("rm", {"path": "/b"})], ToolCallMetric(), grammar=g)
    assert s.detail["fp"] == 10.0
    s = score([("rm", {"path": "/a"})], [("rm", {"path": "/b"})], "tool_call")
    assert s.detail["fp"] == 1.0


def test_score_by_name_and_unknown_name():
    assert score(Episode(output="HI"), "hi", "task_success").value == 1.0
    with pytest.raises(UnknownName, match="did you mean 'tool_call'"):
        score([], [], "tool_cal")
    with pytest.raises(InvalidInput):
        get_metric(42)


def test_evaluate_uses_each_metrics_own_aggregate():
    preds = [[("a", {})], [("a", {}), ("b", {}), ("c", {})]]
    golds = [[("a", {})], [("a", {})]]
    out = evaluate(preds, golds, {"f1": ToolCallMetric(), "traj": TrajectoryMetric("in_order")})
    # micro F1: tp 2, fp 2 -> 4 / 6 (a mean of per-item F1s would be (1 + 0.5) / 2)
    assert out["f1"] == pytest.approx(4 / 6)
    # total raw / total max: (0 + 2) / (1 + 3)
    assert out["traj"] == pytest.approx(2 / 4)


def test_evaluate_with_a_list_of_metrics_and_names():
    eps = [Episode(output="a"), Episode(output="b")]
    golds = [{"output": "a", "calls": []}, {"output": "c", "calls": [("search", {})]}]
    out = evaluate(eps, golds, [TaskSuccessMetric(), "tool_call_arg"])
    assert out == {"task_success": 0.5, "tool_call_arg": 0.0}
    with pytest.raises(InvalidInput, match="a final answer"):
        evaluate(eps, ["a", "c"], ["tool_call"])  # a string gold is not a list of calls
    with pytest.raises(InvalidInput, match="both named"):
        evaluate(eps, ["a", "c"], [TaskSuccessMetric(), TaskSuccessMetric()])


def test_evaluate_length_mismatch():
    with pytest.raises(InvalidInput, match="2 predictions but 1 golds"):
        evaluate([1, 2], [1], [TaskSuccessMetric()])


class _Sig:
    def __init__(self, name, tier, value, log):
        self.name, self.cost_tier, self.value, self.log = name, tier, value, log

    def __call__(self, output):
        self.log.append(self.name)
        return self.value


def test_estimate_quality_runs_cheapest_first_and_combines_by_min():
    log = []
    sigs = [_Sig("judge", 5, 0.7, log), _Sig("format", 0, 1.0, log), _Sig("grounded", 2, 0.9, log)]
    r = estimate_quality("out", sigs)
    assert log == ["format", "grounded", "judge"]
    assert r["order"] == log and r["skipped"] == []
    assert r["estimate"] == 0.7 and r["signals"] == {"judge": 0.7, "format": 1.0, "grounded": 0.9}


def test_estimate_quality_short_circuits_only_when_decided():
    log = []
    sigs = [_Sig("judge", 5, 0.9, log), _Sig("format", 0, 0.0, log)]
    r = estimate_quality("out", sigs)
    assert log == ["format"] and r["skipped"] == ["judge"] and r["estimate"] == 0.0


def test_estimate_quality_mean_runs_everything():
    log = []
    sigs = {"a": _Sig("a", 0, 0.0, log), "b": _Sig("b", 1, 1.0, log)}
    r = estimate_quality("out", sigs, combine="mean", weights={"b": 3.0})
    assert log == ["a", "b"] and r["estimate"] == pytest.approx(0.75)


@pytest.mark.parametrize("bad", [1.5, -0.1, float("nan"), "0.5", None, True])
def test_estimate_quality_refuses_bad_signal_values(bad):
    with pytest.raises(InvalidInput, match="returned"):
        estimate_quality("x", [lambda o: bad])


def test_estimate_quality_bad_args():
    with pytest.raises(InvalidInput):
        estimate_quality("x", [])
    with pytest.raises(InvalidInput):
        estimate_quality("x", [lambda o: 1.0], combine="max")


def test_estimate_quality_with_the_real_judge_signal():
    from ek_agents.scoring.judge import JudgeSignal

    calls = []

    def judge(out, *, criteria=""):
        calls.append(out)
        return 0.8

    j = JudgeSignal(judge, criteria="polite")
    r = estimate_quality("hello", [j, lambda o: 1.0])
    assert r["order"] == ["<lambda>", "judge"] and r["estimate"] == 0.8
    r = estimate_quality("", [j, lambda o: 0.0])  # the cheap check decides: the judge is never paid
    assert r["skipped"] == ["judge"] and calls == ["hello"]
