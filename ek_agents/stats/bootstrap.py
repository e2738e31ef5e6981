"""Bootstrap intervals, seeded: percentile bootstraps of a statistic, of column means, and the
task-cluster bootstrap of a ratio of sums (cost per success) and of a paired difference.

Vectorised with numpy (imported when first used, not at import: ``import ek_agents`` stays
numpy-free); every resample is drawn from ``numpy.random.default_rng(seed)``.
"""
from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Union

from ..core import shape
from ..errors import InsufficientTrials, InvalidInput, did_you_mean
from .intervals import t_quantile, whole_count

__all__ = ["bootstrap_ci", "bootstrap_mean_cis", "VECTORIZED_STATISTICS",
           "cluster_bootstrap_ratio", "PairedDifference", "paired_difference",
           "paired_bootstrap_ratio_difference"]

def _ratio_of_sums(x: Any, axis: int = -1) -> Any:
    import numpy as np

    num, den = x[..., 0].sum(axis=axis), x[..., 1].sum(axis=axis)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1), np.inf)


#: Names ``bootstrap_ci`` computes vectorized over all resamples at once.
#: ``"ratio"`` takes ``(numerator, denominator)`` rows and returns ``sum(num) / sum(den)``
#: (``inf`` when the denominator sums to 0) -- e.g. cost per success.
VECTORIZED_STATISTICS: dict[str, Callable[..., Any]] = {}


def _vec_stats() -> dict[str, Callable[..., Any]]:
    if not VECTORIZED_STATISTICS:
        import numpy as np

        VECTORIZED_STATISTICS.update({
            "mean": np.mean, "median": np.median, "sum": np.sum, "std": np.std,
            "var": np.var, "min": np.min, "max": np.max, "ratio": _ratio_of_sums,
        })
    return VECTORIZED_STATISTICS


_BLOCK_ELEMENTS = 4_000_000  # resampled values held in memory at once (~32 MB of float64)


def _percentile(stats: Any, alpha: float) -> tuple[float, float]:
    import numpy as np

    if np.isnan(stats).any():
        raise InvalidInput(
            f"bootstrap_ci: the statistic returned NaN on {int(np.isnan(stats).sum())} of "
            f"{stats.size} resamples; make it defined on every resample (e.g. return inf, or "
            "guard an empty denominator)")
    q = (alpha / 2.0, 1.0 - alpha / 2.0)
    if np.isfinite(stats).all():
        lo, hi = np.quantile(stats, q)
    else:  # linear interpolation between infinities is NaN: take order statistics instead
        lo = np.quantile(stats, q[0], method="lower")
        hi = np.quantile(stats, q[1], method="higher")
    return (float(lo), float(hi))


def bootstrap_ci(values: Sequence[Any], statistic: Union[str, Callable[..., Any]], *,
                 resamples: int = 2000, alpha: float = 0.05, seed: int = 0,
                 vectorized: bool = False) -> tuple[float, float]:
    """Percentile bootstrap CI for any ``statistic`` over ``values`` (deterministic by seed).

    Resampling indices are drawn once, as a ``(resamples, n)`` matrix, from
    ``numpy.random.default_rng(seed)``. ``values`` is a sequence of numbers, or of equal-length
    rows (e.g. ``(dollars, success)`` per episode: rows are resampled together).
    ``statistic`` may be:

    - a name in :data:`VECTORIZED_STATISTICS` (``"mean"``, ``"median"``, ``"sum"``, ``"std"``,
      ``"var"``, ``"min"``, ``"max"``, ``"ratio"``) -- computed for all resamples in one numpy
      call (2000 resamples over 10k values take a few tens of milliseconds);
    - with ``vectorized=True``, a callable ``f(samples, axis=1)`` taking the
      ``(resamples, n[, m])`` array and returning one value per resample (``numpy.mean`` works);
    - otherwise any callable over one resample (a 1-D numpy array, or a 2-D array of rows),
      called once per resample -- general but slower.

    The interval is the ``alpha/2`` and ``1 - alpha/2`` percentiles of the resampled
    statistic. Infinite statistics are allowed (order statistics are used then); NaN ones
    raise :class:`~ek_agents.errors.InvalidInput`.

    >>> lo, hi = bootstrap_ci([1.0] * 20, lambda v: sum(v) / len(v), resamples=50)
    >>> lo == hi == 1.0
    True
    >>> bootstrap_ci([0, 1] * 50, "mean", seed=1) == bootstrap_ci([0, 1] * 50, "mean", seed=1)
    True
    """
    import numpy as np

    try:
        data = np.asarray(values, dtype=float)
    except (TypeError, ValueError) as exc:
        raise InvalidInput(
            "bootstrap_ci: values must be numbers or equal-length numeric rows") from exc
    if data.ndim == 0 or data.ndim > 2:
        raise InvalidInput(f"bootstrap_ci: values must be 1-D or 2-D, got shape {data.shape}")
    n = data.shape[0]
    if n == 0:
        raise InvalidInput("bootstrap_ci: no values to resample; pass at least one value")
    resamples = whole_count("resamples", resamples)
    if resamples < 1:
        raise InvalidInput("bootstrap_ci: resamples must be >= 1")
    if not 0.0 < alpha < 1.0:
        raise InvalidInput(f"bootstrap_ci: alpha must be in (0, 1), got {alpha!r}")
    if isinstance(statistic, str):
        table = _vec_stats()
        fn = table.get(statistic)
        if fn is None:
            raise InvalidInput(
                f"bootstrap_ci: unknown statistic {statistic!r}"
                f"{did_you_mean(statistic, table)} (one of {sorted(table)}, or pass a callable)")
        if statistic == "ratio" and (data.ndim != 2 or data.shape[1] != 2):
            raise InvalidInput(
                "bootstrap_ci: statistic='ratio' needs (numerator, denominator) rows, got "
                f"shape {data.shape}")
        reduce = lambda block: fn(block, axis=1)  # noqa: E731
    elif vectorized and callable(statistic):
        reduce = lambda block: statistic(block, axis=1)  # noqa: E731
    elif callable(statistic):
        reduce = lambda block: [statistic(s) for s in block]  # noqa: E731
    else:
        raise InvalidInput(f"bootstrap_ci: statistic must be a name or a callable, got {statistic!r}")
    # Resample in blocks of rows (bounded memory); drawing the index matrix block by block
    # consumes the generator exactly as one (resamples, n) draw would.
    block = max(1, min(resamples, _BLOCK_ELEMENTS // max(1, data.size)))
    if statistic == "ratio":  # sums of resampled columns: counts x table, no 2-D gather
        num, den = _resampled_sums([data[:, 0], data[:, 1]], resamples, seed)
        return _percentile(_ratio(num, den), alpha)
    if statistic == "mean" and data.ndim == 1:  # the same means, cache-sized blocks of draws
        return _percentile(_resampled_means([data], resamples, seed)[0], alpha)
    rng = np.random.default_rng(seed)
    out: list = []
    for start in range(0, resamples, block):
        rows = min(block, resamples - start)
        idx = rng.integers(0, n, size=(rows, n))
        res = reduce(data[idx])  # (rows, n) or (rows, n, m)
        out.extend(np.asarray(res, dtype=float).reshape(-1).tolist()
                   if not isinstance(res, list) else res)
    try:
        stats = np.asarray(out, dtype=float).reshape(-1)
    except (TypeError, ValueError) as exc:
        raise InvalidInput("bootstrap_ci: the statistic must return one number per resample") from exc
    if stats.size != resamples:
        raise InvalidInput(
            f"bootstrap_ci: the statistic returned {stats.size} values for {resamples} resamples"
            " (a vectorized statistic must reduce along axis=1)")
    return _percentile(stats, alpha)


def bootstrap_mean_cis(columns: Sequence[Sequence[float]], *, resamples: int = 2000,
                       alpha: float = 0.05, seed: int = 0) -> list[tuple[float, float]]:
    """``[bootstrap_ci(c, "mean", resamples=resamples, alpha=alpha, seed=seed) for c in
    columns]``, the same numbers, with the resampling indices drawn once for every column of
    the same length (same seed, same length: the same draws) and each block of them gathered
    from every such column in turn: a pass^k curve's 40 intervals draw their indices once.

    >>> cols = [[0.0, 1.0, 0.5], [1.0, 1.0, 0.0, 0.25]]
    >>> bootstrap_mean_cis(cols, seed=3) == [bootstrap_ci(c, "mean", seed=3) for c in cols]
    True
    """
    import numpy as np

    resamples = whole_count("resamples", resamples)
    if resamples < 1:
        raise InvalidInput("bootstrap_mean_cis: resamples must be >= 1")
    if not 0.0 < alpha < 1.0:
        raise InvalidInput(f"bootstrap_mean_cis: alpha must be in (0, 1), got {alpha!r}")
    data = []
    for i, c in enumerate(columns):
        try:
            col = np.asarray(c, dtype=float)
        except (TypeError, ValueError) as exc:
            raise InvalidInput(f"bootstrap_mean_cis: column {i} must be numbers") from exc
        if col.ndim != 1 or col.size == 0:
            raise InvalidInput(f"bootstrap_mean_cis: column {i} must be a non-empty 1-D "
                               f"sequence of numbers, got shape {col.shape}")
        data.append(col)
    by_length: dict[int, list[int]] = {}
    for i, col in enumerate(data):
        by_length.setdefault(col.size, []).append(i)
    stats: list = [None] * len(data)
    for members in by_length.values():
        for i, st in zip(members, _resampled_means([data[i] for i in members], resamples, seed)):
            stats[i] = st
    return [_percentile(st, alpha) for st in stats]


def _resampled_means(columns: Sequence[Any], resamples: int, seed: int) -> list:
    """For each 1-D float column (all of one length ``n``), its mean over each of
    ``resamples`` resamples: row ``r`` of ``numpy.random.default_rng(seed).integers(0, n,
    (resamples, n))`` gathered from the column and averaged with ``numpy.mean(..., axis=1)``
    (so exactly the numbers of one such draw), the indices drawn by :class:`_TaskIndices`
    a cache-sized sub-block of rows at a time (``_COUNT_ELEMENTS``), never the whole matrix."""
    import numpy as np

    n = columns[0].size
    draws = _TaskIndices(seed, n)
    sub = max(1, min(resamples, _COUNT_ELEMENTS // n))
    slots = np.empty(sub * n, dtype=np.uint64)
    outs = [np.empty(resamples) for _ in columns]
    for start in range(0, resamples, sub):
        m = min(sub, resamples - start)
        part = slots[:m * n]
        draws.fill(part)
        idx = part.view(np.int64).reshape(m, n)
        for col, out in zip(columns, outs):
            out[start:start + m] = np.mean(col[idx], axis=1)
    return outs

# -- cluster bootstrap ----------------------------------------------------------------------

def _resampled_sums(columns: Sequence[Any], resamples: int, seed: int) -> list:
    """For each 1-D column (one value per task), its sum over ``resamples`` cluster
    resamples of the tasks (the same draws for every column): a list of ``(resamples,)``
    arrays.

    Resample ``r`` is row ``r`` of ``numpy.random.default_rng(seed).integers(0, g, (resamples,
    g))`` -- the same indices, drawn by :class:`_TaskIndices` -- but that matrix is never held
    whole: a cache-sized sub-block of rows at a time (``_COUNT_ELEMENTS`` indices). One or two
    columns are gathered as one complex column (``num + 1j * den``: one 16-byte read per index)
    and summed along each row. More columns go through counts: each row's count of every task
    (one weighted ``bincount``, the weights ones, so the counts come out as floats) times the
    columns (``einsum``), measured faster than gathering column pairs at four and five columns
    (bench/bench_bootstrap.py). Either way the sums are those of the gathered values up to
    floating-point summation order."""
    import numpy as np

    table = np.ascontiguousarray(np.vstack([np.asarray(c, dtype=float) for c in columns]))
    k, g = table.shape
    draws = _TaskIndices(seed, g)
    sub = max(1, min(resamples, _COUNT_ELEMENTS // max(1, g)))
    slots = np.empty(sub * g, dtype=np.uint64)  # a sub-block's indices (counts: slot r * g + i)
    out = np.empty((resamples, k))
    if k <= 2:
        pair = table[0] + 1j * (table[1] if k == 2 else 0.0)
        for start in range(0, resamples, sub):
            m = min(sub, resamples - start)
            part = slots[:m * g]
            draws.fill(part)
            sums = pair[part.view(np.int64).reshape(m, g)].sum(axis=1)
            out[start:start + m, 0] = sums.real
            if k == 2:
                out[start:start + m, 1] = sums.imag
        return [np.ascontiguousarray(out[:, j]) for j in range(k)]
    offsets = np.arange(sub, dtype=np.uint64)[:, None] * np.uint64(g)
    ones = np.ones(sub * g)

    def count(part: Any, m: int, start: int) -> None:
        counts = np.bincount(part.view(np.int64), weights=ones[:m * g], minlength=m * g)
        # einsum's own loops, not BLAS: a threaded BLAS on a busy 2-core machine measured
        # 3-15x slower than this for these thin products
        np.einsum("ij,kj->ik", counts.reshape(m, g), table, out=out[start:start + m])

    starts = range(0, resamples, sub)
    if len(starts) == 1:
        draws.fill(slots[:resamples * g])
        np.add(slots.reshape(sub, g), offsets, out=slots.reshape(sub, g))
        count(slots, resamples, 0)
        return [np.ascontiguousarray(out[:, j]) for j in range(k)]
    # Two stages in two threads (numpy releases the GIL in both): this one draws sub-block
    # i + 1 (the generator's stream, in order) while the other counts sub-block i into its own
    # rows of ``out``. Each sub-block's arithmetic is the one-thread loop's, so the sums are
    # the same bits; ``_PIPELINE`` buffers bound the memory.
    ring = [slots] + [np.empty(sub * g, dtype=np.uint64) for _ in range(_PIPELINE - 1)]
    pending: deque = deque()
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="ek-bootstrap") as counter:
        for i, start in enumerate(starts):
            if len(pending) == _PIPELINE - 1:
                pending.popleft().result()  # its buffer is the one about to be refilled
            m = min(sub, resamples - start)
            part = ring[i % _PIPELINE][:m * g]
            draws.fill(part)
            np.add(part.reshape(m, g), offsets[:m], out=part.reshape(m, g))
            pending.append(counter.submit(count, part, m, start))
        for done in pending:
            done.result()
    return [np.ascontiguousarray(out[:, j]) for j in range(k)]


#: Sub-block buffers the two-thread count in :func:`_resampled_sums` cycles through.
_PIPELINE = 3


_COUNT_ELEMENTS = 1 << 16  # indices per sub-block: its slots, counts and ones stay in L2


class _TaskIndices:
    """The stream of ``numpy.random.default_rng(seed).integers(0, g, dtype=np.int32)``,
    index for index, made from the generator's raw 64-bit outputs with array operations.

    numpy draws each bounded integer by Lemire's method on 32-bit words: ``m = word * g``,
    the index is ``m >> 32``, and a word whose ``m mod 2**32`` falls below
    ``(2**32 - g) % g`` is rejected and the next word tried (fewer than ``g / 2**32`` of
    them). A 64-bit output supplies two words, its low half first. Done here in bulk:
    ``random_raw`` for the words (a third of the time numpy's per-index loop takes; with the
    mapping, about 60%), the rejected words (rare) dropped, and the rest mapped to indices --
    the same indices in the same order, so every interval computed from them is the one the
    plain ``integers`` draws give (tests check this against loops over such draws)."""

    def __init__(self, seed: int, g: int) -> None:
        import numpy as np

        if not 1 <= g <= 2 ** 31 - 1:
            raise InvalidInput(f"bootstrap: cannot resample {g} tasks (from 1 to {2 ** 31 - 1}); "
                               "group the values into fewer clusters")
        self._bits = np.random.default_rng(seed).bit_generator
        self._g = g
        self._threshold = (2 ** 32 - g) % g
        self._spare = np.empty(0, dtype=np.uint32)  # the unused high half of the last output

    def _words(self, want: int) -> Any:
        import numpy as np

        if self._spare.size:
            words, self._spare = self._spare[:want], self._spare[want:]
            return words
        # little-endian view: the low half of each output first, as numpy's next_uint32
        words = np.asarray(self._bits.random_raw((want + 1) // 2), dtype="<u8").view("<u4")
        words, self._spare = words[:want], words[want:]
        return words

    def fill(self, out: Any) -> None:
        """Fill the 1-D uint64 array ``out`` with the next ``out.size`` indices."""
        import numpy as np

        g, done = self._g, 0
        while done < out.size:
            words = self._words(out.size - done)
            if self._threshold and int(np.multiply(words, np.uint32(g)).min()) < self._threshold:
                words = words[np.multiply(words, np.uint32(g)) >= self._threshold]
            dst = out[done:done + words.size]
            np.copyto(dst, words)
            dst *= np.uint64(g)
            dst >>= np.uint64(32)
            done += words.size


def _ratio(num: Any, den: Any) -> Any:
    import numpy as np

    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1), np.inf)


def _check_columns(fn: str, *cols: Any) -> int:
    import numpy as np

    lens = {len(c) for c in cols}
    if len(lens) != 1:
        raise InvalidInput(f"{fn}: the per-task columns differ in length ({sorted(lens)}); give "
                           "one value per task in each")
    g = lens.pop()
    if g == 0:
        raise InvalidInput(f"{fn}: no tasks to resample; pass at least one task")
    for c in cols:
        a = np.asarray(c, dtype=float)
        if not np.isfinite(a).all() or (a < 0).any():
            raise InvalidInput(f"{fn}: per-task values must be finite and >= 0, got {list(c)[:8]!r}")
    return g


def cluster_bootstrap_ratio(numerators: Sequence[float], denominators: Sequence[float], *,
                            resamples: int = 2000, alpha: float = 0.05,
                            seed: int = 0) -> tuple[float, float]:
    """Bootstrap-t CI of ``R = sum(num) / sum(den)`` resampling **tasks** (a cluster bootstrap).

    One value per task: e.g. the dollars a task's trials spent and the successes they had,
    so each resample keeps every task's trials together (Field & Welsh 2007; Miller 2024):
    cost and success vary between tasks (hard tasks cost more and succeed less), and
    resampling episodes instead treats that shared variation as independent noise.

    The interval is **studentized** (bootstrap-t, Efron & Tibshirani 1993 ch. 12): each
    resample's ``t* = (R* - R) / se*`` with the linearised cluster-robust
    ``se = sqrt(G/(G-1) * sum_i (num_i - R den_i)^2) / sum(den)``, and the CI is
    ``[R - t*_{1-alpha/2} se, R - t*_{alpha/2} se]``. A ratio of skewed sums over a few
    dozen tasks is itself skewed; the percentile interval under-covers there (measured 0.928
    at 30 tasks x 4 trials with lognormal costs, bench/bench_stats.py), the bootstrap-t does
    not. When the ratio cannot be studentized (fewer than two tasks, a zero standard error,
    or no success at all) the percentile interval is returned. A resample without
    successes has an infinite ratio.

    >>> cluster_bootstrap_ratio([2.0, 2.0, 2.0], [1, 1, 1])
    (2.0, 2.0)
    """
    import numpy as np

    g = _check_columns("cluster_bootstrap_ratio", numerators, denominators)
    resamples = whole_count("resamples", resamples)
    if resamples < 1 or not 0.0 < alpha < 1.0:
        raise InvalidInput(f"cluster_bootstrap_ratio: resamples must be >= 1 and alpha in (0, 1), "
                           f"got {resamples!r}, {alpha!r}")
    num = np.asarray(numerators, dtype=float)
    den = np.asarray(denominators, dtype=float)
    sn, sd, snn, snd, sdd = _resampled_sums([num, den, num * num, num * den, den * den],
                                            resamples, seed)
    ratios = _ratio(sn, sd)
    if g < 2 or den.sum() <= 0:
        return _percentile(ratios, alpha)
    r = num.sum() / den.sum()
    se = math.sqrt(g / (g - 1) * float(((num - r * den) ** 2).sum())) / den.sum()
    if not se > 0:
        return _percentile(ratios, alpha)
    with np.errstate(divide="ignore", invalid="ignore"):
        ok = sd > 0
        rr = np.where(ok, ratios, 0.0)
        ss = np.maximum(snn - 2 * rr * snd + rr * rr * sdd, 0.0)
        se_star = np.sqrt(g / (g - 1) * ss) / np.where(ok, sd, 1.0)
        t_star = np.where(ok, (rr - r) / np.where(se_star > 0, se_star, np.inf), np.inf)
    t_lo, t_hi = _percentile(t_star, alpha)
    return (float(max(0.0, r - t_hi * se)), float(r - t_lo * se))


@shape()
class PairedDifference:
    """``a - b`` of two ratio-of-sums statistics measured on the **same tasks**.

    ``diff`` = ``sum(num_a)/sum(den_a) - sum(num_b)/sum(den_b)``; ``se`` its cluster-robust
    (CR1) standard error over tasks by linearisation; ``df`` = ``n_tasks - 1``.
    """

    diff: float
    se: float
    n_tasks: int
    df: int

    def upper(self, alpha: float) -> float:
        """One-sided ``1 - alpha`` upper bound (Student t at ``df``)."""
        return self.diff + t_quantile(1.0 - alpha, max(self.df, 1)) * self.se

    def lower(self, alpha: float) -> float:
        """One-sided ``1 - alpha`` lower bound (Student t at ``df``)."""
        return self.diff - t_quantile(1.0 - alpha, max(self.df, 1)) * self.se


def paired_difference(num_a: Sequence[float], den_a: Sequence[float], num_b: Sequence[float],
                      den_b: Sequence[float]) -> PairedDifference:
    """Paired, task-clustered difference of two rates over the same tasks (Miller 2024, "paired
    differences").

    Task ``i`` contributes ``num_a[i] / den_a[i]`` trials to run a and the same for run b
    (successes / trials for a success rate; a per-task value / 1 for pass^k). Both runs
    share every task's difficulty, so the difference is estimated from per-task
    differences: the linearised residuals ``u_i = (num_a_i - R_a den_a_i) / D_a -
    (num_b_i - R_b den_b_i) / D_b`` give ``se = sqrt(G/(G-1) * sum u_i^2)``. That removes the
    between-task variance both runs share, which Newcombe's unpaired interval counts twice
    (it is too wide for the same tasks: false alarms well below its nominal level, and lost
    power). With equal weights this is the paired t-test on per-task differences.

    >>> d = paired_difference([3, 2, 4], [4, 4, 4], [4, 3, 4], [4, 4, 4])
    >>> round(d.diff, 4), d.df
    (-0.1667, 2)
    """
    import numpy as np

    g = _check_columns("paired_difference", num_a, den_a, num_b, den_b)
    na, da, nb, db = (np.asarray(x, dtype=float) for x in (num_a, den_a, num_b, den_b))
    if da.sum() <= 0 or db.sum() <= 0:
        raise InsufficientTrials("paired_difference: a run has no trials (denominators sum to 0); "
                                 "run at least one trial on each side")
    ra, rb = na.sum() / da.sum(), nb.sum() / db.sum()
    u = (na - ra * da) / da.sum() - (nb - rb * db) / db.sum()
    se = math.sqrt(g / (g - 1) * float(np.dot(u, u))) if g > 1 else math.inf
    return PairedDifference(float(ra - rb), se, g, g - 1)


def paired_bootstrap_ratio_difference(num_a: Sequence[float], den_a: Sequence[float],
                                      num_b: Sequence[float], den_b: Sequence[float], *,
                                      resamples: int = 2000, alpha: float = 0.05,
                                      seed: int = 0) -> tuple[float, float]:
    """Percentile CI of ``R_a - R_b`` (``R = sum(num) / sum(den)``) by resampling **tasks
    jointly** in both runs: the paired cluster bootstrap for cost per success
    (``num`` = a task's dollars, ``den`` = its successes). An infinite ratio in a resample
    (no success) gives an infinite difference there.

    >>> paired_bootstrap_ratio_difference([2, 2], [1, 1], [1, 1], [1, 1])
    (1.0, 1.0)
    """
    import numpy as np

    _check_columns("paired_bootstrap_ratio_difference", num_a, den_a, num_b, den_b)
    resamples = whole_count("resamples", resamples)
    if resamples < 1 or not 0.0 < alpha < 1.0:
        raise InvalidInput("paired_bootstrap_ratio_difference: resamples must be >= 1 and alpha "
                           f"in (0, 1), got {resamples!r}, {alpha!r}")
    sa, sda, sb, sdb = _resampled_sums([num_a, den_a, num_b, den_b], resamples, seed)
    ra, rb = _ratio(sa, sda), _ratio(sb, sdb)
    with np.errstate(invalid="ignore"):
        d = np.where(np.isinf(ra) & np.isinf(rb), 0.0, ra - rb)
    return _percentile(d, alpha)
