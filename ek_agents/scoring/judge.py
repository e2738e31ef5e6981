"""LLM-as-judge: a reference-free Signal, a reference-based Metric, position-bias-corrected
pairwise preference, and the validation that must precede trusting any of them.

ek-agents never imports an LLM client: every judge here is an **injected** callable.

>>> first_wins = lambda x, y, *, criteria="": 1.0      # a maximally position-biased judge
>>> pairwise_judge(first_wins, "A", "B")               # swapping exposes it as a tie
0.5
>>> r = judge_validation([1, 1, 0, 0], [1, 1, 0, 0])
>>> r["alpha"], r["verdict"]
(1.0, 'good')
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Callable, Optional

from ..stats.agreement import check_level, cohen_kappa, is_missing, krippendorff_alpha
from ..base import is_episode
from ..core import Finding, GraphGrammar, Score
from ..errors import InvalidInput

__all__ = ["JudgeSignal", "JudgeMetric", "pairwise_judge", "judge_validation",
           "JUDGE_COST_TIER", "ALPHA_GOOD", "ALPHA_TENTATIVE", "JUDGE_PASS", "judge_checker"]

#: The cascade tier of a judge: the most expensive signal.
JUDGE_COST_TIER: int = 5
#: Krippendorff's conventional thresholds: >= 0.8 reliable, >= 0.667 tentative conclusions only.
ALPHA_GOOD: float = 0.8
#: Krippendorff's alpha below which a judge's agreement with people supports no conclusion.
ALPHA_TENTATIVE: float = 0.667
#: A judge's score at or above which a trial graded by a judge counts as a success.
JUDGE_PASS: float = 0.5


def _unit_score(value: Any, who: str) -> tuple[float, Optional[str]]:
    """A judge's answer as a float in [0, 1] (+ an optional rationale)."""
    rationale = None
    if isinstance(value, Mapping):
        rationale = value.get("rationale", value.get("reason"))
        value = value.get("score")
    elif isinstance(value, tuple) and len(value) == 2 and isinstance(value[1], str):
        value, rationale = value
    if isinstance(value, bool):
        value = float(value)
    try:
        f = float(value)
    except (TypeError, ValueError):
        raise InvalidInput(f"{who}: the judge returned {value!r}; it must return a number in "
                           "[0, 1] (or (score, rationale) / {'score':..., 'rationale':...})") from None
    if math.isnan(f) or not 0.0 <= f <= 1.0:
        raise InvalidInput(f"{who}: the judge returned {f!r}, outside [0, 1]; rescale its "
                           "output (e.g. a 1-10 rating r -> (r - 1) / 9)")
    return f, rationale


class JudgeSignal:
    """A reference-free, criteria-only LLM judge as a :class:`~ek_agents.core.Signal`.

    ``judge(output, *, criteria) -> float`` in ``[0, 1]`` is injected; ``criteria`` is bound at
    construction so the object satisfies ``signal(output) -> float``. A score outside
    ``[0, 1]`` (or NaN) raises :class:`~ek_agents.errors.InvalidInput`.

    >>> s = JudgeSignal(lambda out, *, criteria: float("polite" in out), criteria="politeness")
    >>> s("a polite reply"), s.cost_tier, s.finding("t1", "says please").kind
    (1.0, 5, 'judge')
    """

    def __init__(self, judge: Callable[..., Any], criteria: str = "",
                 cost_tier: int = JUDGE_COST_TIER, name: str = "judge") -> None:
        if not callable(judge):
            raise InvalidInput(f"JudgeSignal: judge must be a callable (output, *, criteria) -> "
                               f"float, got {judge!r:.60}")
        self.judge, self.criteria, self.cost_tier, self.name = judge, criteria, int(cost_tier), name

    def __call__(self, output: Any) -> float:
        return _unit_score(self.judge(output, criteria=self.criteria), f"JudgeSignal {self.name!r}")[0]

    def finding(self, target: str, rationale: str, score: Optional[float] = None) -> Finding:
        """Surface a judge's *rationale* as a :class:`~ek_agents.core.Finding` (not just a scalar)."""
        return Finding(target=str(target), message=str(rationale), kind="judge", score=score)

    def __repr__(self) -> str:
        return f"JudgeSignal(name={self.name!r}, criteria={self.criteria!r}, cost_tier={self.cost_tier})"


class JudgeMetric:
    """A **reference-based** LLM judge as a :class:`~ek_agents.core.Metric` (the ``score()`` side).

    ``judge(output, *, criteria, reference) -> float`` in ``[0, 1]``. ``pred`` may be an
    Episode (its ``output`` is judged) or the output itself; ``gold`` is the reference. The
    judge may also return ``(score, rationale)``: the rationale lands in ``Score.detail``.
    ``aggregate`` is the mean judge score.

    >>> m = JudgeMetric(lambda out, *, criteria, reference: float(out == reference))
    >>> m.aggregate([m.score("a", "a"), m.score("b", "a")])
    0.5
    """

    higher_is_better = True

    def __init__(self, judge: Callable[..., Any], criteria: str = "") -> None:
        if not callable(judge):
            raise InvalidInput(f"JudgeMetric: judge must be a callable (output, *, criteria, "
                               f"reference) -> float, got {judge!r:.60}")
        self.judge, self.criteria = judge, criteria

    def score(self, pred: Any, gold: Any, *, grammar: Optional[GraphGrammar] = None) -> Score:
        output = pred.output if is_episode(pred) and hasattr(pred, "output") else pred
        value, rationale = _unit_score(
            self.judge(output, criteria=self.criteria, reference=gold), "JudgeMetric")
        detail: dict = {"criteria": self.criteria}
        if rationale is not None:
            detail["rationale"] = rationale
        return Score(value, detail)

    def aggregate(self, scores: Sequence[Score]) -> float:
        """Mean judge score (a judge score *is* per-item; there is no global accumulation)."""
        vals = [float(s.value if isinstance(s, Score) else s) for s in scores]
        if not vals:
            raise InvalidInput("JudgeMetric.aggregate: no scores; judge at least one item")
        return math.fsum(vals) / len(vals)

    def __repr__(self) -> str:
        return f"JudgeMetric(criteria={self.criteria!r})"


def judge_checker(judge: Any) -> Optional[Callable[[Any, Any], bool]]:
    """A :class:`JudgeMetric` or :class:`JudgeSignal` as a run's checker ``(episode, gold) ->
    bool``: the trial succeeds when the judge scores it at least :data:`JUDGE_PASS` (a
    JudgeMetric reads the task's gold as its reference; a JudgeSignal judges the output alone).
    None for anything else.

    >>> check = judge_checker(JudgeSignal(lambda out, *, criteria: float(out.isupper())))
    >>> from ek_agents.base import Episode
    >>> check(Episode("t1", output="HI"), None), check(Episode("t1", output="hi"), None)
    (True, False)
    """
    if isinstance(judge, JudgeMetric):
        def metric_check(episode: Any, gold: Any) -> bool:
            return float(judge.score(episode, gold).value) >= JUDGE_PASS
        fn = metric_check
    elif isinstance(judge, JudgeSignal):
        def signal_check(episode: Any, gold: Any) -> bool:
            output = episode.output if is_episode(episode) and hasattr(episode, "output") else episode
            return judge(output) >= JUDGE_PASS
        fn = signal_check
    else:
        return None
    fn.__name__ = f"{type(judge).__name__}_checker"
    fn.__wrapped__ = judge  # type: ignore[attr-defined]
    return fn


def pairwise_judge(judge: Callable[..., Any], a: Any, b: Any, *, criteria: str = "",
                   swap: bool = True) -> float:
    """Pairwise preference for ``a`` over ``b``, **corrected for position bias**.

    ``judge(x, y, *, criteria) -> float`` in ``[0, 1]`` is the preference for ``x`` (the one
    shown first). With ``swap`` (default) the judge is asked again with the order swapped and
    the two answers are averaged: ``(judge(a, b) + 1 - judge(b, a)) / 2``. ``0.5`` is a tie.

    >>> first_wins = lambda x, y, *, criteria="": 1.0
    >>> pairwise_judge(first_wins, "A", "B")
    0.5
    >>> pairwise_judge(first_wins, "A", "B", swap=False)
    1.0
    """
    if not callable(judge):
        raise InvalidInput(f"pairwise_judge: judge must be a callable, got {judge!r:.60}")
    forward = _unit_score(judge(a, b, criteria=criteria), "pairwise_judge")[0]
    if not swap:
        return forward
    backward = _unit_score(judge(b, a, criteria=criteria), "pairwise_judge")[0]
    return (forward + (1.0 - backward)) / 2.0


_KAPPA_FOR_LEVEL = {"nominal": None, "ordinal": "linear", "interval": "quadratic", "ratio": "quadratic"}


def judge_validation(judge_labels: Sequence[Any], human_labels: Sequence[Any], *,
                     level: str = "nominal") -> dict:
    """Certify a judge against human labels **before** trusting it.

    ``human_labels`` is one human's labels, or a list of several humans' label lists (rows =
    raters); ``None``/NaN marks a missing label. Returns ``alpha`` (Krippendorff, over the
    judge and every human at ``level``), ``kappa`` (Cohen's, judge vs each human on complete
    pairs, averaged over humans; weighted linear for ordinal and quadratic for interval/ratio
    data), ``percent_agreement`` (exact matches over complete pairs), ``n`` (units the judge
    and at least one human labelled), ``verdict`` (``alpha >= 0.8`` ``"good"``, ``>= 0.667``
    ``"tentative"``, else ``"unreliable"``) and ``notes``. An undefined statistic (no variation
    in the labels) is ``None`` with a note -- and the verdict is then ``"unreliable"``.

    >>> r = judge_validation([1, 1, 0, 0], [1, 1, 0, 0])
    >>> r["alpha"], r["kappa"], r["percent_agreement"], r["n"], r["verdict"]
    (1.0, 1.0, 1.0, 4, 'good')
    """
    judge = list(judge_labels.tolist() if hasattr(judge_labels, "tolist") else judge_labels)
    humans_raw = human_labels.tolist() if hasattr(human_labels, "tolist") else list(human_labels)
    several = bool(humans_raw) and all(
        isinstance(h, Sequence) and not isinstance(h, (str, bytes)) for h in humans_raw)
    humans = [list(h) for h in humans_raw] if several else [list(humans_raw)]
    if not judge or any(len(h) != len(judge) for h in humans):
        raise InvalidInput(
            f"judge_validation: judge and human label lists must be equally long and non-empty "
            f"(judge {len(judge)}, humans {[len(h) for h in humans]})")
    check_level(level)
    notes: list[str] = []
    alpha: Optional[float]
    try:
        alpha = krippendorff_alpha([judge] + humans, level=level)
    except InvalidInput as exc:
        alpha = None
        notes.append(f"alpha undefined: {exc}")
    kappas, agree, pairs = [], 0, 0
    for h in humans:
        pa = [(x, y) for x, y in zip(judge, h) if not is_missing(x) and not is_missing(y)]
        pairs += len(pa)
        agree += sum(x == y for x, y in pa)
        if pa:
            try:
                kappas.append(cohen_kappa([x for x, _ in pa], [y for _, y in pa],
                                          weights=_KAPPA_FOR_LEVEL[level]))
            except InvalidInput as exc:
                notes.append(f"kappa undefined: {exc}")
    n = sum(1 for u, x in enumerate(judge)
            if not is_missing(x) and any(not is_missing(h[u]) for h in humans))
    if alpha is None:
        verdict = "unreliable"
    elif alpha >= ALPHA_GOOD:
        verdict = "good"
    elif alpha >= ALPHA_TENTATIVE:
        verdict = "tentative"
    else:
        verdict = "unreliable"
    return {
        "alpha": alpha, "kappa": math.fsum(kappas) / len(kappas) if kappas else None,
        "percent_agreement": agree / pairs if pairs else None, "n": n, "verdict": verdict,
        "level": level, "n_humans": len(humans), "notes": notes,
    }
