"""Krippendorff's alpha vs the `krippendorff` package and the published example; Cohen's
kappa vs scikit-learn; the judge Signal / Metric / pairwise / validation."""
import math

import krippendorff
import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from ek_agents import errors
from ek_agents.stats.agreement import cohen_kappa, krippendorff_alpha
from ek_agents.core import Finding, Metric, Score, Signal
from ek_agents.scoring.judge import JudgeMetric, JudgeSignal, judge_validation, pairwise_judge

WORST: dict[str, float] = {}

# Krippendorff (2011), "Computing Krippendorff's alpha-reliability": 4 observers x 12 units
K2011 = [[1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
         [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
         [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
         [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None]]


def _nan(rows):
    return np.array([[np.nan if v is None else v for v in r] for r in rows], dtype=float)


@pytest.mark.parametrize("level,published", [("nominal", 0.743), ("ordinal", 0.815),
                                             ("interval", 0.849), ("ratio", 0.797)])
def test_alpha_reproduces_krippendorffs_published_example(level, published):
    ours = krippendorff_alpha(K2011, level=level)
    assert round(ours, 3) == published
    ref = krippendorff.alpha(reliability_data=_nan(K2011), level_of_measurement=level)
    WORST["alpha vs krippendorff"] = max(WORST.get("alpha vs krippendorff", 0.0), abs(ours - ref))
    assert ours == pytest.approx(ref, abs=1e-12)
    assert krippendorff_alpha(_nan(K2011), level=level) == ours  # NaN works as missing too


def test_alpha_agrees_with_krippendorff_package_on_random_tables():
    rng = np.random.default_rng(11)
    worst, cases = 0.0, 0
    for _ in range(60):
        raters, units, k = rng.integers(2, 6), rng.integers(5, 40), rng.integers(2, 6)
        truth = rng.integers(1, k + 1, size=units)
        data = np.where(rng.random((raters, units)) < 0.7, truth, rng.integers(1, k + 1, size=(raters, units)))
        data = data.astype(float)
        data[rng.random((raters, units)) < 0.15] = np.nan
        for level in ("nominal", "ordinal", "interval", "ratio"):
            try:
                ref = krippendorff.alpha(reliability_data=data, level_of_measurement=level)
            except ValueError:  # the package refuses degenerate tables; so do we
                with pytest.raises(errors.InvalidInput):
                    krippendorff_alpha(data, level=level)
                continue
            if not np.isfinite(ref):
                continue
            worst = max(worst, abs(krippendorff_alpha(data, level=level) - ref))
            cases += 1
    WORST["alpha vs krippendorff"] = max(WORST.get("alpha vs krippendorff", 0.0), worst)
    assert cases > 150 and worst < 1e-9


def test_alpha_edge_cases():
    assert krippendorff_alpha([["a", "b", "a"], ["a", "b", "a"]]) == 1.0  # string categories
    with pytest.raises(errors.InvalidInput, match="no variation"):
        krippendorff_alpha([[1, 1, 1], [1, 1, 1]])
    with pytest.raises(errors.InsufficientTrials, match="two raters"):
        krippendorff_alpha([[1, None], [None, 2]])
    with pytest.raises(errors.InvalidInput, match="did you mean 'ordinal'"):
        krippendorff_alpha(K2011, level="ordnial")
    with pytest.raises(errors.InvalidInput, match="numeric labels"):
        krippendorff_alpha([["a", "b"], ["a", "a"]], level="interval")
    with pytest.raises(errors.InvalidInput, match="different lengths"):
        krippendorff_alpha([[1, 2], [1]])


@pytest.mark.parametrize("weights", [None, "linear", "quadratic"])
def test_kappa_agrees_with_scikit_learn(weights):
    rng = np.random.default_rng(5)
    worst = 0.0
    for _ in range(200):
        n, k = rng.integers(5, 60), rng.integers(2, 7)
        a = rng.integers(0, k, size=n)
        b = np.where(rng.random(n) < 0.6, a, rng.integers(0, k, size=n))
        if len(set(a) | set(b)) < 2:
            continue
        ref = cohen_kappa_score(a, b, weights=weights)
        if not np.isfinite(ref):
            continue
        worst = max(worst, abs(cohen_kappa(a.tolist(), b.tolist(), weights=weights) - ref))
    WORST[f"kappa ({weights}) vs sklearn"] = worst
    assert worst < 1e-12
    labels_a, labels_b = ["cat", "dog", "dog", "eel"], ["cat", "dog", "eel", "eel"]
    assert cohen_kappa(labels_a, labels_b, weights=weights) == pytest.approx(
        cohen_kappa_score(labels_a, labels_b, weights=weights), abs=1e-12)


def test_kappa_errors():
    with pytest.raises(errors.InvalidInput, match="missing"):
        cohen_kappa([1, None], [1, 0])
    with pytest.raises(errors.InvalidInput, match="equally long"):
        cohen_kappa([1, 0], [1])
    with pytest.raises(errors.InvalidInput, match="undefined"):
        cohen_kappa([1, 1], [1, 1])
    with pytest.raises(errors.InvalidInput, match="did you mean 'linear'"):
        cohen_kappa([1, 0], [1, 0], weights="lineer")


# -- judge ---------------------------------------------------------------------------------

def test_judge_signal_is_a_signal_and_validates_scores():
    seen = {}

    def judge(output, *, criteria):
        seen["criteria"] = criteria
        return 0.25 if "meh" in output else 1.0

    s = JudgeSignal(judge, criteria="helpful")
    assert isinstance(s, Signal) and s.name == "judge" and s.cost_tier == 5
    assert s("meh answer") == 0.25 and seen["criteria"] == "helpful"
    f = s.finding("task-7", "the answer cites no source", score=0.25)
    assert isinstance(f, Finding) and (f.target, f.message, f.kind, f.score) == \
        ("task-7", "the answer cites no source", "judge", 0.25)
    for bad in (1.5, -0.1, float("nan"), "great"):
        with pytest.raises(errors.InvalidInput, match=r"judge returned"):
            JudgeSignal(lambda o, *, criteria, v=bad: v)("x")
    with pytest.raises(errors.InvalidInput, match="callable"):
        JudgeSignal("not a judge")


def test_judge_metric_scores_outputs_against_references():
    from ek_agents.base import Episode

    def judge(output, *, criteria, reference):
        return (1.0 if output == reference else 0.0, f"{criteria}: compared")

    m = JudgeMetric(judge, criteria="exactness")
    assert isinstance(m, Metric) and m.higher_is_better
    s1 = m.score(Episode("t", output="Paris"), "Paris")
    s2 = m.score("Lyon", "Paris")
    assert isinstance(s1, Score) and s1.value == 1.0 and s2.value == 0.0
    assert s1.detail == {"criteria": "exactness", "rationale": "exactness: compared"}
    assert m.aggregate([s1, s2, s1, s1]) == 0.75
    with pytest.raises(errors.InvalidInput, match="no scores"):
        m.aggregate([])
    with pytest.raises(errors.InvalidInput, match="outside"):
        JudgeMetric(lambda o, *, criteria, reference: 7).score("x", "y")


def test_pairwise_judge_cancels_position_bias():
    first_wins = lambda x, y, *, criteria="": 1.0  # noqa: E731
    assert pairwise_judge(first_wins, "A", "B") == 0.5
    assert pairwise_judge(first_wins, "A", "B", swap=False) == 1.0
    # a fair judge that prefers the longer answer, plus a +0.2 bias toward position one
    biased = lambda x, y, *, criteria="": min(1.0, (0.7 if len(x) > len(y) else 0.3) + 0.2)  # noqa: E731
    assert pairwise_judge(biased, "long answer", "short") == pytest.approx(0.7)
    assert pairwise_judge(biased, "short", "long answer") == pytest.approx(0.3)
    with pytest.raises(errors.InvalidInput):
        pairwise_judge(lambda x, y, *, criteria="": 2.0, "a", "b")


def test_judge_validation_verdicts_and_statistics():
    r = judge_validation([1, 1, 0, 0], [1, 1, 0, 0])
    assert (r["alpha"], r["kappa"], r["percent_agreement"], r["n"], r["verdict"]) == (1.0, 1.0, 1.0, 4, "good")
    rng = np.random.default_rng(2)
    human = rng.integers(0, 2, size=200).tolist()
    noisy = [h if rng.random() < 0.9 else 1 - h for h in human]
    r = judge_validation(noisy, human)
    ref_alpha = krippendorff.alpha(reliability_data=np.array([noisy, human], float),
                                   level_of_measurement="nominal")
    assert r["alpha"] == pytest.approx(ref_alpha, abs=1e-12)
    assert r["kappa"] == pytest.approx(cohen_kappa_score(noisy, human), abs=1e-12)
    assert r["percent_agreement"] == pytest.approx(np.mean(np.array(noisy) == np.array(human)))
    assert r["verdict"] == ("good" if r["alpha"] >= 0.8 else "tentative" if r["alpha"] >= 0.667 else "unreliable")
    coin = rng.integers(0, 2, size=200).tolist()
    assert judge_validation(coin, human)["verdict"] == "unreliable"


def test_judge_validation_several_humans_missing_labels_and_levels():
    judge = [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None]
    humans = K2011[1:]
    r = judge_validation(judge, humans, level="ordinal")
    assert r["alpha"] == pytest.approx(krippendorff_alpha(K2011, level="ordinal"))
    assert r["n_humans"] == 3 and r["n"] == 9
    # ordinal data -> linearly weighted kappa against each human, averaged
    exp = []
    for h in humans:
        pa = [(x, y) for x, y in zip(judge, h) if x is not None and y is not None]
        exp.append(cohen_kappa_score([x for x, _ in pa], [y for _, y in pa], weights="linear"))
    assert r["kappa"] == pytest.approx(float(np.mean(exp)), abs=1e-12)
    # tentative band
    tent = judge_validation([1] * 8 + [0] * 11 + [1], [1] * 10 + [0] * 10)  # alpha = 0.707
    assert 0.667 <= tent["alpha"] < 0.8 and tent["verdict"] == "tentative"
    flat = judge_validation([1, 1, 1], [1, 1, 1])
    assert flat["alpha"] is None and flat["verdict"] == "unreliable" and flat["notes"]
    with pytest.raises(errors.InvalidInput, match="equally long"):
        judge_validation([1, 0], [1])
    with pytest.raises(errors.InvalidInput, match="unknown level"):
        judge_validation([1, 0], [1, 0], level="nominl")


def test_zz_report_max_differences():
    print("\nMAX ABS DIFFERENCES:", {k: f"{v:.3g}" for k, v in WORST.items()})
