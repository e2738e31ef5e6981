"""Inter-rater agreement: Krippendorff's alpha and Cohen's kappa.

A judge is just another annotator, so these certify an LLM judge against human labels
(:func:`ek_agents.scoring.judge.judge_validation`) exactly as they measure the ceiling of a gold standard.

>>> data = [[1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],   # Krippendorff (2011), 4 raters
...         [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
...         [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
...         [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None]]
>>> round(krippendorff_alpha(data), 3), round(krippendorff_alpha(data, level="interval"), 3)
(0.743, 0.849)
>>> cohen_kappa([0, 1, 1, 0], [0, 1, 0, 0])
0.5
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Optional

from ..errors import InsufficientTrials, InvalidInput, did_you_mean

__all__ = ["krippendorff_alpha", "cohen_kappa", "LEVELS", "KAPPA_WEIGHTS", "is_missing"]

#: Measurement levels :func:`krippendorff_alpha` understands.
LEVELS: tuple[str, ...] = ("nominal", "ordinal", "interval", "ratio")
#: Weightings :func:`cohen_kappa` understands (``None`` = unweighted).
KAPPA_WEIGHTS: tuple[Optional[str], ...] = (None, "linear", "quadratic")


def is_missing(x: Any) -> bool:
    """``None`` or a float NaN: a unit this rater did not label."""
    return x is None or (isinstance(x, float) and math.isnan(x))


def check_level(level: str) -> str:
    """``level`` when it is one of :data:`LEVELS` (InvalidInput naming the closest otherwise)."""
    if level not in LEVELS:
        raise InvalidInput(f"unknown level {level!r}{did_you_mean(str(level), LEVELS)} (one of {LEVELS})")
    return level


def _rows(data: Any) -> list[list[Any]]:
    if hasattr(data, "tolist"):  # a numpy array
        data = data.tolist()
    if isinstance(data, (str, bytes)) or not isinstance(data, Sequence) or not data:
        raise InvalidInput("krippendorff_alpha: data must be a non-empty raters x units table "
                           "(one row per rater, None/NaN for a missing label)")
    rows = []
    for r in data:
        if hasattr(r, "tolist"):
            r = r.tolist()
        if isinstance(r, (str, bytes)) or not isinstance(r, Sequence):
            raise InvalidInput(f"krippendorff_alpha: each rater's row must be a sequence, got {r!r:.60}")
        rows.append(list(r))
    width = len(rows[0])
    if any(len(r) != width for r in rows):
        raise InvalidInput(f"krippendorff_alpha: rows have different lengths "
                           f"{sorted({len(r) for r in rows})}; one column per unit for every rater")
    return rows


def _numeric(values: list[Any], what: str, level: str) -> None:
    for v in values:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise InvalidInput(f"{what}: level={level!r} needs numeric labels, got {v!r}; "
                               "use level='nominal' for categories")


def _delta2(values: list[Any], n_c: list[float], level: str) -> list[list[float]]:
    """Squared difference function between every pair of label values."""
    m = len(values)
    d = [[0.0] * m for _ in range(m)]
    for i in range(m):
        for j in range(m):
            if i == j:
                continue
            a, b = values[i], values[j]
            if level == "nominal":
                d[i][j] = 1.0
            elif level == "interval":
                d[i][j] = float(a - b) ** 2
            elif level == "ratio":
                d[i][j] = 0.0 if a + b == 0 else (float(a - b) / float(a + b)) ** 2
            else:  # ordinal: ranks weighted by the marginal frequencies between the two values
                lo, hi = min(i, j), max(i, j)
                d[i][j] = (math.fsum(n_c[lo:hi + 1]) - (n_c[i] + n_c[j]) / 2.0) ** 2
    return d


def krippendorff_alpha(data: Any, *, level: str = "nominal") -> float:
    """Krippendorff's alpha over a **raters x units** table (``None``/NaN = missing).

    Built from the coincidence matrix: each unit with ``m >= 2`` labels contributes its
    ordered label pairs from different raters with weight ``1 / (m - 1)``; units with fewer
    than two labels are unpairable and ignored. ``alpha = 1 - (n - 1) * sum(o * d) /
    sum(n_c n_k d)`` with ``d`` the squared difference of ``level`` (``"nominal"``,
    ``"ordinal"``, ``"interval"``, ``"ratio"``). Handles any number of raters and missing
    data. Raises :class:`~ek_agents.errors.InvalidInput` when alpha is undefined (no unit has two
    labels, or every label is the same value: there is no variation to agree about).

    >>> krippendorff_alpha([[1, 1, 0, 0], [1, 1, 0, 0]])
    1.0
    """
    level = check_level(level)
    rows = _rows(data)
    units = [[r[u] for r in rows if not is_missing(r[u])] for u in range(len(rows[0]))]
    units = [u for u in units if len(u) >= 2]
    if not units:
        raise InsufficientTrials("krippendorff_alpha: no unit has labels from two raters; "
                                 "alpha needs pairable units")
    flat = [v for u in units for v in u]
    if level != "nominal":
        _numeric(flat, "krippendorff_alpha", level)
    try:
        values = sorted(set(flat))
    except TypeError:  # mixed label types: order does not matter for nominal data
        values = sorted(set(flat), key=repr)
    index = {v: i for i, v in enumerate(values)}
    m = len(values)
    o = [[0.0] * m for _ in range(m)]
    for u in units:
        counts: dict[int, int] = {}
        for v in u:
            counts[index[v]] = counts.get(index[v], 0) + 1
        w = 1.0 / (len(u) - 1)
        for i, ci in counts.items():
            for j, cj in counts.items():
                o[i][j] += (ci * (cj - (i == j))) * w
    n_c = [math.fsum(row) for row in o]
    n = math.fsum(n_c)
    d = _delta2(values, n_c, level)
    observed = math.fsum(o[i][j] * d[i][j] for i in range(m) for j in range(m))
    expected = math.fsum(n_c[i] * n_c[j] * d[i][j] for i in range(m) for j in range(m))
    if expected == 0.0:
        raise InvalidInput(
            f"krippendorff_alpha: every label is {values[0]!r}; with no variation alpha is "
            "undefined (add units the raters could disagree on)")
    return 1.0 - (n - 1.0) * observed / expected


def cohen_kappa(a: Sequence[Any], b: Sequence[Any], *, weights: Optional[str] = None) -> float:
    """Cohen's kappa between two raters' complete label lists.

    ``weights`` ``None`` (unweighted), ``"linear"`` or ``"quadratic"``: the disagreement
    between labels ``i`` and ``j`` is their distance **in the sorted list of labels seen**
    (as scikit-learn's ``cohen_kappa_score``). Missing labels raise
    :class:`~ek_agents.errors.InvalidInput` (use :func:`krippendorff_alpha` for incomplete
    data), as does an undefined kappa (both raters always gave the same single label).

    >>> cohen_kappa([1, 2, 3, 3], [1, 2, 3, 2], weights="quadratic")
    0.8
    """
    if weights not in KAPPA_WEIGHTS:
        raise InvalidInput(f"cohen_kappa: unknown weights {weights!r}"
                           f"{did_you_mean(str(weights), [w for w in KAPPA_WEIGHTS if w])} "
                           f"(one of {KAPPA_WEIGHTS})")
    a, b = list(a), list(b)
    if len(a) != len(b) or not a:
        raise InvalidInput(f"cohen_kappa: needs two equally long, non-empty label lists "
                           f"(got {len(a)} and {len(b)})")
    if any(is_missing(x) for x in a + b):
        raise InvalidInput("cohen_kappa: a label is missing (None/NaN); Cohen's kappa needs "
                           "complete pairs -- drop them or use krippendorff_alpha")
    try:
        labels = sorted(set(a) | set(b))
    except TypeError:
        raise InvalidInput("cohen_kappa: labels must be mutually comparable (all numbers or "
                           "all strings)") from None
    idx = {v: i for i, v in enumerate(labels)}
    k = len(labels)
    conf = [[0.0] * k for _ in range(k)]
    for x, y in zip(a, b):
        conf[idx[x]][idx[y]] += 1.0
    total = float(len(a))
    rows = [math.fsum(r) for r in conf]
    cols = [math.fsum(conf[i][j] for i in range(k)) for j in range(k)]

    def w(i: int, j: int) -> float:
        if weights is None:
            return 0.0 if i == j else 1.0
        return abs(i - j) if weights == "linear" else float((i - j) ** 2)

    observed = math.fsum(w(i, j) * conf[i][j] for i in range(k) for j in range(k))
    expected = math.fsum(w(i, j) * rows[i] * cols[j] / total for i in range(k) for j in range(k))
    if expected == 0.0:
        raise InvalidInput("cohen_kappa: both raters used a single identical label; kappa is "
                           "undefined without variation")
    return 1.0 - observed / expected
