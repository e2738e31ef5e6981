"""Min-cost bipartite assignment: a self-contained Hungarian solver for rectangular cost matrices.

Used to pair predicted with gold calls (:func:`ek_agents.scoring.toolcalls.match_calls`), by the
any-order trajectory distance and by the BFCL checker's parallel-call pairing.
"""
from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

from ..errors import InvalidInput

__all__ = ["min_cost_assignment"]


def min_cost_assignment(cost: Sequence[Sequence[float]]) -> list[tuple[int, int]]:
    """Optimal (min total cost) assignment for a rectangular cost matrix: the Hungarian method
    with potentials (Kuhn-Munkres / Jonker-Volgenant form), O(n^2 m), pure Python.

    Returns ``min(n_rows, n_cols)`` pairs ``(row, col)`` sorted by row. Deterministic: ties
    are broken by scan order (lowest column index first), so the same input gives the same pairs.

    >>> min_cost_assignment([[4, 1, 3], [2, 0, 5], [3, 2, 2]])
    [(0, 1), (1, 0), (2, 2)]
    """
    n = len(cost)
    if n == 0:
        return []
    m = len(cost[0])
    if m == 0:
        return []
    if any(len(row) != m for row in cost) or not all(map(math.isfinite, itertools.chain.from_iterable(cost))):
        raise InvalidInput("min_cost_assignment needs a rectangular matrix of finite costs")
    if n == 1:
        row = cost[0]
        return [(0, min(range(m), key=row.__getitem__))]
    transposed = n > m
    if transposed:
        cost = [list(col) for col in zip(*cost)]
        n, m = m, n
    inf = math.inf
    u = [0.0] * (n + 1)
    v = [0.0] * (m + 1)
    p = [0] * (m + 1)
    way = [0] * (m + 1)
    cols = range(1, m + 1)
    for i in range(1, n + 1):
        p[0] = i
        j0 = 0
        minv = [inf] * (m + 1)
        used = [False] * (m + 1)
        while True:
            used[j0] = True
            i0 = p[j0]
            row = cost[i0 - 1]
            ui0 = u[i0]
            delta = inf
            j1 = 0
            for j in cols:
                if not used[j]:
                    cur = row[j - 1] - ui0 - v[j]
                    if cur < minv[j]:
                        minv[j] = cur
                        way[j] = j0
                    if minv[j] < delta:
                        delta = minv[j]
                        j1 = j
            for j in range(m + 1):
                if used[j]:
                    u[p[j]] += delta
                    v[j] -= delta
                else:
                    minv[j] -= delta
            j0 = j1
            if p[j0] == 0:
                break
        while j0:
            j1 = way[j0]
            p[j0] = p[j1]
            j0 = j1
    pairs = [(p[j] - 1, j - 1) for j in cols if p[j]]
    if transposed:
        pairs = [(j, i) for i, j in pairs]
    return sorted(pairs)
