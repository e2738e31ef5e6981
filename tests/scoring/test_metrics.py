"""Checkers, grade(), TaskSuccessMetric and CostPerSuccessMetric."""
import pytest

from ek_agents.scoring import metrics
from ek_agents.base import Cost, Episode, TaskSpec
from ek_agents.errors import InvalidInput, UnknownName
from ek_agents.scoring.metrics import (
    TaskSuccessMetric, final_state_match, get_checker, grade,
    output_match, recorded_success, state_equal,
)


def ep(**kw):
    return Episode(kw.pop("task_id", "t"), **kw)


# ----------------------------------------------------------------------------- output_match
def test_output_match_canonicalizes_case_and_whitespace():
    assert output_match(ep(output="  Hello\u00a0  WORLD "), "hello world")
    assert not output_match(ep(output="hello worlds"), "hello world")


def test_output_match_of_two_strings_is_state_equal_under_canonicalize():
    # two plain strings take a short path; it decides exactly as state_equal does
    from ek_agents.core import canonicalize

    words = ["", " ", "Paris", "paris ", "PARIS\n", "Stra\u00dfe", "strasse", "\ufb01le", "file",
             "a  b", "a b", "42", " 42.0", "\u00e9", "e\u0301"]
    for a in words:
        for b in words:
            assert output_match(ep(output=a), b) is state_equal(a, b, canon=canonicalize), (a, b)


def test_output_match_gold_dict_with_output_key():
    assert output_match(ep(output="Paris"), {"output": "paris"})
    assert output_match(ep(output="Paris"), {"output": "paris", "final_state": {"x": 1}})
    # a dict that is not a wrapper is compared literally
    assert output_match(ep(output={"city": "PARIS"}), {"city": "paris"})
    assert not output_match(ep(output={"city": "Rome"}), {"city": "paris"})


def test_output_match_numbers_and_strings():
    assert output_match(ep(output=" 42 "), 42)
    assert output_match(ep(output=42), "42.0")
    assert not output_match(ep(output="forty-two"), 42)
    assert not output_match(ep(output=True), 1)


def test_output_match_refuses_missing_gold():
    with pytest.raises(InvalidInput, match="no gold output"):
        output_match(ep(output=None), None)
    with pytest.raises(InvalidInput, match="no gold output"):  # a gold with only calls
        output_match(ep(output="x"), {"calls": [("search", {})]})
    with pytest.raises(InvalidInput, match="no gold final_state"):
        final_state_match(ep(final_state={}), {"output": "x"})


def test_errored_episode_never_succeeds_even_if_output_matches():
    bad = ep(output="hi", meta={"error": "TimeoutError: too slow"})
    assert not output_match(bad, "hi")
    assert not final_state_match(bad.replace(final_state={"a": 1}), {"a": 1})
    assert not recorded_success(bad.replace(success=True), None)
    assert not get_checker(lambda e, g: True)(bad, None)
    assert grade([bad], [TaskSpec("t", gold="hi")])[0].success is False
    assert TaskSuccessMetric().score(bad, "hi").value == 0.0


# ----------------------------------------------------------------------- final_state_match
@pytest.mark.parametrize("got,goal", [
    ({"a": 1, "b": 2}, {"b": 2, "a": 1}),             # key order
    ({"xs": [1, 2]}, {"xs": (1, 2)}),                   # list vs tuple
    ({"n": 1}, {"n": 1.0}),                             # 1 vs 1.0
    ({"o": [{"id": 1, "s": "ok"}]}, {"o": ({"s": "ok", "id": 1.0},)}),  # nested
])
def test_final_state_not_differences(got, goal):
    assert final_state_match(ep(final_state=got), goal)
    assert final_state_match(ep(final_state=got), {"final_state": goal})


@pytest.mark.parametrize("got,goal", [
    ({"paid": True}, {"paid": 1}),        # a bool is never a number (decision)
    ({"paid": False}, {"paid": 0}),
    ({"n": 1}, {"n": "1"}),
    ({"a": None}, {}),                    # missing key vs None
    ({"xs": [1, 2]}, {"xs": [2, 1]}),     # list order matters
    ({"s": "Done"}, {"s": "done"}),       # states are data: no case folding
    ({"xs": {1, 2}}, {"xs": [1, 2]}),     # a set is not a list
    ({"v": 0.1 + 0.2}, {"v": 0.3}),       # exact numbers
])
def test_final_state_differences(got, goal):
    assert not final_state_match(ep(final_state=got), goal)


def test_final_state_goal_that_has_other_keys_is_literal():
    # {"final_state": ..., "extra": ...} is not a wrapper: compared as the literal goal
    goal = {"final_state": "closed", "extra": 1}
    assert final_state_match(ep(final_state={"extra": 1, "final_state": "closed"}), goal)
    assert not final_state_match(ep(final_state="closed"), goal)


def test_final_state_refuses_missing_goal():
    with pytest.raises(InvalidInput, match="no gold final_state"):
        final_state_match(ep(final_state={}), None)


def test_state_equal_sets_and_objects():
    assert state_equal({1, 2}, frozenset({2, 1.0}))
    assert state_equal(Cost(input_tokens=3), Cost(input_tokens=3))
    assert not state_equal(Cost(input_tokens=3), Cost(input_tokens=4))


# ------------------------------------------------------------------------ recorded / registry
def test_recorded_success():
    assert recorded_success(ep(success=True), None) is True
    assert recorded_success(ep(success=False), "ignored") is False
    with pytest.raises(InvalidInput, match="no recorded success"):
        recorded_success(ep(), None)


def test_registry_names_and_callables():
    assert get_checker(None) is output_match
    assert get_checker("output") is output_match
    assert get_checker("final_state") is final_state_match
    assert get_checker("recorded") is recorded_success
    f = get_checker(lambda e, g: e.output == g)
    assert f(ep(output=3), 3) is True and f(ep(output=3), 4) is False


def test_unknown_checker_name_did_you_mean():
    with pytest.raises(UnknownName, match="did you mean 'final_state'"):
        get_checker("final_stat")
    with pytest.raises(KeyError):  # also the builtin
        get_checker("nope")


def test_checker_returning_non_bool_is_refused():
    with pytest.raises(InvalidInput, match="must return True or False"):
        get_checker(lambda e, g: 0.7)(ep(), None)


def test_not_a_checker():
    with pytest.raises(InvalidInput):
        get_checker(42)


def test_register_checker():
    metrics.register_checker("always", lambda e, g: True)
    try:
        assert get_checker("always")(ep(), None)
    finally:
        metrics.CHECKERS.pop("always")


# ---------------------------------------------------------------------------------- grade
def test_grade_uses_task_checker_over_run_check_and_never_mutates():
    tasks = [TaskSpec("a", gold="x"), TaskSpec("b", gold={"done": True}, checker="final_state")]
    eps = [Episode("a", output="X"), Episode("b", final_state={"done": True}, output="nope")]
    graded = grade(eps, {t.task_id: t for t in tasks})
    assert [g.success for g in graded] == [True, True]
    assert [e.success for e in eps] == [None, None]


def test_grade_with_callable_check():
    tasks = [TaskSpec("a", gold=3)]
    graded = grade([Episode("a", output=3)], tasks, check=lambda e, g: e.output == g)
    assert graded[0].success is True


def test_grade_unknown_task_names_it():
    with pytest.raises(InvalidInput, match="'zzz'"):
        grade([Episode("zzz", output="x")], [TaskSpec("a", gold="x")])


def test_grade_duplicate_task_ids_refused():
    with pytest.raises(InvalidInput, match="twice"):
        grade([], [TaskSpec("a", gold="x"), TaskSpec("a", gold="y")])


# ---------------------------------------------------------------------------- the metrics
def test_task_success_metric_rate():
    m = TaskSuccessMetric()
    assert m.higher_is_better
    scores = [m.score(Episode(output=o), g) for o, g in [("a", "A"), ("b", "c"), ("d", "d"), ("e", "f")]]
    assert [s.value for s in scores] == [1.0, 0.0, 1.0, 0.0]
    assert m.aggregate(scores) == 0.5
    with pytest.raises(InvalidInput):
        m.aggregate([])


def test_task_success_metric_accepts_taskspec_and_bare_output():
    m = TaskSuccessMetric("output")
    assert m.score("HI", TaskSpec("t", gold="hi")).value == 1.0


def test_task_success_metric_final_state():
    m = TaskSuccessMetric("final_state")
    assert m.score(Episode(final_state={"a": 1}), {"a": 1.0}).value == 1.0
