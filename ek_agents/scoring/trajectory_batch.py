"""The batched in-order trajectory distance: many (prediction, gold) pairs at once -- a vectorised
edit-distance DP over blocks of pairs, rapidfuzz's C++ Levenshtein on coded calls where a batch
allows it, and bounds that skip the DP where they decide the answer. Same numbers as the
per-pair :func:`ek_agents.scoring.trajectory.trajectory_distance` (tested).
"""
from __future__ import annotations

from itertools import accumulate, compress, count
from typing import Any, Callable, Optional

from rapidfuzz.distance import Levenshtein, Postfix, Prefix
from rapidfuzz.process import cpdist

from .alignment import PriceMemo, call_price, in_order_distance, in_order_max
from .argmatch import CallComparer
from .callcodes import MAX_CODES, CallCodes, code_id, code_point, encode_calls
from .callviews import PairViews, as_calls

__all__ = ["in_order_batch", "in_order_uniform", "in_order_coded"]

_CHUNK = 8192  # pairs per DP block: 8192 x 12 x 12 float64 cells = 9 MB per array


class _Pricer:
    """Substitution cost and exactness of (pred view, gold view) pairs of the same tool, each
    distinct pair priced once with :func:`call_price` (a pair is coded ``pred * stride + gold``)."""

    def __init__(self, np: Any, cmp: CallComparer, up: list, ug: list) -> None:
        self.np, self.cmp, self.up, self.ug = np, cmp, up, ug
        self.stride = len(ug) + 1
        self.codes = np.empty(0, dtype=np.int64)  # sorted
        self.costs = np.empty(0, dtype=np.float64)
        self.exacts = np.empty(0, dtype=bool)

    def _positions(self, codes: Any) -> tuple[Any, Any]:
        np = self.np
        uniq, inv = np.unique(codes, return_inverse=True)
        pos = np.searchsorted(self.codes, uniq)
        seen = pos < len(self.codes)
        seen[seen] = self.codes[pos[seen]] == uniq[seen]
        if not seen.all():
            fresh = uniq[~seen]
            priced = [call_price(self.cmp, self.up[c // self.stride], self.ug[c % self.stride]) for c in fresh.tolist()]
            order = np.argsort(np.concatenate([self.codes, fresh]), kind="stable")
            self.codes = np.concatenate([self.codes, fresh])[order]
            self.costs = np.concatenate([self.costs, np.array([c for c, _ in priced], dtype=np.float64)])[order]
            self.exacts = np.concatenate([self.exacts, np.array([x for _, x in priced], dtype=bool)])[order]
            pos = np.searchsorted(self.codes, uniq)
        return pos, inv.reshape(-1)

    def cost(self, codes: Any) -> Any:
        pos, inv = self._positions(codes)
        return self.costs[pos][inv]

    def exact(self, codes: Any) -> Any:
        pos, inv = self._positions(codes)
        return self.exacts[pos][inv]


def _padded(np: Any, flat: list, lens: list, pad: int) -> Any:
    """A ``(pairs, max len)`` int array of view indices, each row padded with ``pad``."""
    lens_a = np.asarray(lens, dtype=np.int64)
    width = int(lens_a.max()) if len(lens) else 0
    out = np.full((len(lens), width), pad, dtype=np.int64)
    if flat:
        rows = np.repeat(np.arange(len(lens)), lens_a)
        starts = np.cumsum(lens_a) - lens_a
        cols = np.arange(len(flat)) - np.repeat(starts, lens_a)
        out[rows, cols] = np.asarray(flat, dtype=np.int64)
    return out


def in_order_batch(cmp: CallComparer, views: PairViews) -> list[tuple[float, float]]:
    """:func:`in_order_distance` and :func:`in_order_max` over many pairs at once: the alignment DP runs
    over blocks of pairs, each DP cell one numpy operation across the block.

    The block is padded: a padded position weighs 0, and aligning it with a real call costs that
    call's weight (the price of the call's own gap), so the padded alignment has the distance of
    the real one. Substitution costs come from the views: another tool costs the larger weight,
    equal plain calls cost 0, and each distinct (pred view, gold view) pair of the same tool is
    priced once with :func:`sub_cost`. Common ends are trimmed as in the single-pair path."""
    import numpy as np  # lazily: numpy adds ~150 ms to importing this module (python -X importtime)

    n = len(views.pred_lens)
    up, pflat, plens = views.pred_unique, views.pred_index, views.pred_lens
    ug, gflat, glens = views.gold_unique, views.gold_index, views.gold_lens
    tools: dict = {}
    keys: dict = {}
    # per unique view: tool id, weight, exact class (equal classes >= 0 <=> an exact plain match)
    p_tool = np.array([tools.setdefault(v.tool, len(tools)) for v in up] + [-1], dtype=np.int64)
    g_tool = np.array([tools.setdefault(v.tool, len(tools)) for v in ug] + [-2], dtype=np.int64)
    p_w = np.array([v.weight for v in up] + [0.0], dtype=np.float64)
    g_w = np.array([v.weight for v in ug] + [0.0], dtype=np.float64)
    p_cls = np.array([keys.setdefault(v.key, len(keys)) if not v.own_errors else -1 for v in up] + [-1],
                     dtype=np.int64)
    g_cls = np.array([keys.setdefault(v.key, len(keys)) if v.key is not None else -2 for v in ug] + [-2],
                     dtype=np.int64)
    P_all = _padded(np, pflat, plens, len(up))  # the pad index points at the appended pad entry
    G_all = _padded(np, gflat, glens, len(ug))
    lp_all = np.asarray(plens, dtype=np.int64)
    lg_all = np.asarray(glens, dtype=np.int64)
    pricer = _Pricer(np, cmp, up, ug)
    raw = np.empty(n, dtype=np.float64)
    for s in range(0, n, _CHUNK):
        e = min(n, s + _CHUNK)
        lp, lg = lp_all[s:e], lg_all[s:e]
        Lp, Lg = int(lp.max(initial=0)), int(lg.max(initial=0))
        P, G = P_all[s:e, :Lp], G_all[s:e, :Lg]
        wP, wG = p_w[P], g_w[G]
        same = p_tool[P][:, :, None] == g_tool[G][:, None, :]
        S = np.where(same, 0.0, np.maximum(wP[:, :, None], wG[:, None, :]))
        plain = same & (p_cls[P][:, :, None] == g_cls[G][:, None, :]) & (p_cls[P][:, :, None] >= 0)
        todo = same & ~plain  # the same tool, not equal plain calls: priced by call_price
        code = P[:, :, None] * pricer.stride + G[:, None, :]
        B = e - s
        rows = np.arange(B)

        def exact(r: Any, i: Any, j: Any) -> Any:
            out = plain[r, i, j]
            t = todo[r, i, j]
            if t.any():
                out[t] = pricer.exact(code[r, i, j][t])
            return out

        # trim the common prefix and suffix of exact calls (as in_order_distance does)
        m = min(Lp, Lg)
        diag = np.zeros((B, m + 1), dtype=bool)
        if m:
            k = np.arange(m)
            diag[:, :m] = exact(rows[:, None], k[None, :], k[None, :]) & (k[None, :] < np.minimum(lp, lg)[:, None])
        lo = np.argmin(diag, axis=1)
        hp, hg = lp.copy(), lg.copy()
        for _ in range(m):
            live = (hp > lo) & (hg > lo)
            if not live.any():
                break
            ok = np.zeros(B, dtype=bool)
            ok[live] = exact(rows[live], hp[live] - 1, hg[live] - 1)
            if not ok.any():
                break
            hp = hp - ok
            hg = hg - ok
        # price the remaining same-tool cells inside each pair's trimmed window
        inside = ((np.arange(Lp)[None, :] >= lo[:, None]) & (np.arange(Lp)[None, :] < hp[:, None]))[:, :, None] \
            & ((np.arange(Lg)[None, :] >= lo[:, None]) & (np.arange(Lg)[None, :] < hg[:, None]))[:, None, :]
        todo &= inside
        if todo.any():
            S[todo] = pricer.cost(code[todo])
        np_, ng_ = hp - lo, hg - lo
        Mp, Mg = int(np_.max(initial=0)), int(ng_.max(initial=0))
        ii = lo[:, None] + np.arange(Mp)[None, :]
        jj = lo[:, None] + np.arange(Mg)[None, :]
        rp = np.arange(Mp)[None, :] < np_[:, None]
        rg = np.arange(Mg)[None, :] < ng_[:, None]
        a_w = np.where(rp, wP[rows[:, None], np.minimum(ii, max(Lp - 1, 0))] if Lp else 0.0, 0.0)
        b_w = np.where(rg, wG[rows[:, None], np.minimum(jj, max(Lg - 1, 0))] if Lg else 0.0, 0.0)
        if not (Mp and Mg):  # every pair of the block has a side trimmed to nothing
            raw[s:e] = a_w.sum(axis=1) + b_w.sum(axis=1)
            continue
        S2 = S[rows[:, None, None], np.minimum(ii, Lp - 1)[:, :, None], np.minimum(jj, Lg - 1)[:, None, :]]
        both = rp[:, :, None] & rg[:, None, :]
        S2 = np.where(both, S2, np.maximum(a_w[:, :, None], b_w[:, None, :]))
        prev = [np.zeros(B)]
        for j in range(Mg):
            prev.append(prev[-1] + b_w[:, j])
        for i in range(Mp):
            a = a_w[:, i]
            cur = [prev[0] + a]
            Si = S2[:, i, :]
            for j in range(Mg):
                cur.append(np.minimum(np.minimum(prev[j] + Si[:, j], prev[j + 1] + a), cur[j] + b_w[:, j]))
            prev = cur
        out = prev[-1]
        raw[s:e] = out
    # the normalizer: one weight everywhere -> w * max(len) (what in_order_max returns), else per pair
    ws = set(p_w[:-1].tolist()) | set(g_w[:-1].tolist())
    if len(ws) <= 1:
        w0 = ws.pop() if ws else 0.0
        mx = (w0 * np.maximum(lp_all, lg_all)).tolist()
    else:
        mx = [in_order_max([p.weight for p in pv], [g.weight for g in gv]) for pv, gv in zip(views.pred, views.gold)]
    return list(zip(raw.tolist(), mx))


def _spans(flat: str, lens: list) -> list:
    """``flat`` cut into consecutive pieces of lengths ``lens``."""
    ends = list(accumulate(lens))
    return list(map(flat.__getitem__, map(slice, [0, *ends], ends)))


def in_order_uniform(cmp: CallComparer, views: PairViews) -> Optional[list[tuple[float, float]]]:
    """:func:`in_order_batch` when every call weighs the same ``w`` (None otherwise), mostly in
    rapidfuzz's C++ Levenshtein (see :func:`_bounded`), from prepared views."""
    up, ug = views.pred_unique, views.gold_unique
    ws = {v.weight for v in up} | {v.weight for v in ug}
    if len(ws) > 1:
        return None
    w = float(ws.pop()) if ws else 1.0
    keyed: dict = {}
    tools: dict = {}
    own = len(up) + len(ug)  # classes of their own, numbered after every shared class
    p_cls, g_cls = [], []
    for v in up:
        p_cls.append(keyed.setdefault(v.key, len(keyed)) if not v.own_errors else -1)
    for v in ug:
        g_cls.append(keyed.setdefault(v.key, len(keyed)) if v.key is not None else -1)
    if 2 * own > 0xD800:  # one character per class, the largest 2 * own - 1 (below the surrogates)
        return None
    p_chr = [chr(own + i if c < 0 else c) for i, c in enumerate(p_cls)]
    g_chr = [chr(own + len(up) + i if c < 0 else c) for i, c in enumerate(g_cls)]
    p_tool = [chr(tools.setdefault(v.tool, len(tools))) for v in up]
    g_tool = [chr(tools.setdefault(v.tool, len(tools))) for v in ug]
    pi, gi = views.pred_index, views.gold_index
    plens, glens = views.pred_lens, views.gold_lens
    pstart = [0, *accumulate(plens)]
    gstart = [0, *accumulate(glens)]

    def window(b: int, lo: int, hi: int) -> tuple[list, list]:
        return ([up[i] for i in pi[pstart[b] + lo:pstart[b + 1] - hi]],
                [ug[j] for j in gi[gstart[b] + lo:gstart[b + 1] - hi]])

    return _bounded(cmp, w, (_spans("".join(map(p_chr.__getitem__, pi)), plens),
                             _spans("".join(map(g_chr.__getitem__, gi)), glens)),
                    (_spans("".join(map(p_tool.__getitem__, pi)), plens),
                     _spans("".join(map(g_tool.__getitem__, gi)), glens)), window)


def in_order_coded(cmp: CallComparer, preds: list, golds: list,
                    merge: Optional[bool] = None) -> Optional[list[tuple[float, float]]]:
    """:func:`in_order_uniform` straight from the calls, when every call is plain (see
    :mod:`ek_agents.scoring.callcodes`: one code point per call, computed in C) and every tool weighs
    the same; None otherwise. When distinct calls are few (or a tool is declared), a view is
    built per distinct call and classes are merged by the views' keys (:func:`_merged`: the
    tightest bounds); else views are built only for the calls a DP looks at. Either way equal
    classes are exact matches, so the numbers are those of the single-pair path. ``merge``
    forces one way or the other (where a tool is declared, merging is always needed)."""
    codes = encode_calls(_call_lists(preds), _call_lists(golds))
    if codes is None:
        return None
    ws = {cmp.weight(t) for t in codes.tool_names}
    if len(ws) > 1:
        return None
    w = float(ws.pop()) if ws else 1.0
    reps = codes.representatives
    pv, gv = _Views(cmp.pred, reps), _Views(cmp.gold, reps)
    pr, gr = codes.classes
    calls = sum(map(len, pr)) + sum(map(len, gr))
    if merge is None:
        merge = 8 * len(reps) <= calls
    if not merge and not any(map(cmp.grammar.nodes.__contains__, codes.tool_names)):
        # mostly distinct calls and no declared tool (so no call has errors of its own and no
        # gold a marker: equal classes are exact matches as they are): views only where a DP needs them
        pc, gc = pr, gr
    else:
        merged = _merged(codes, pv, gv)
        if merged is None:
            return None
        pc, gc = merged

    def window(b: int, lo: int, hi: int) -> tuple[list, list]:
        p, g = pr[b], gr[b]
        return list(map(pv.__getitem__, p[lo:len(p) - hi])), list(map(gv.__getitem__, g[lo:len(g) - hi]))

    return _bounded(cmp, w, (pc, gc), codes.tools, window)


class _Views(dict):
    """The view of each class character of a batch, built on first use."""

    def __init__(self, make: Callable[[tuple], Any], reps: list) -> None:
        super().__init__()
        self.make, self.reps = make, reps

    def __missing__(self, c: str) -> Any:
        v = self[c] = self.make(self.reps[code_id(c)])
        return v


def _merged(codes: CallCodes, pv: _Views, gv: _Views) -> Optional[tuple[list, list]]:
    """Each side's class strings with classes whose views have equal keys made one class
    (equal under the grammar and the canonicalizer: ``1`` and ``1.0``, ``"Blue Hat"`` and
    ``"bluehat"``), and each call with errors of its own (or a gold with markers) a class of
    its own on its side; None when that needs more characters than there are."""
    for views, rows in ((pv, codes.classes[0]), (gv, codes.classes[1])):
        for c in set("".join(rows)):
            views[c]
    first: dict = {}  # each merged class takes the smallest id among its classes: nothing moves when nothing merges
    for views, plain in ((pv, lambda v: not v.own_errors), (gv, lambda v: v.key is not None)):
        for c, v in views.items():
            if plain(v):
                i = code_id(c)
                if first.get(v.key, i) >= i:
                    first[v.key] = i
    own = len(codes.representatives)  # then the classes of their own, pred side first
    p_own = [c for c, v in pv.items() if v.own_errors]
    g_own = [c for c, v in gv.items() if v.key is None]
    if own + len(p_own) + len(g_own) >= MAX_CODES:
        return None
    p_map = {c: first[v.key] for c, v in pv.items() if not v.own_errors}
    g_map = {c: first[v.key] for c, v in gv.items() if v.key is not None}
    p_map.update((c, own + i) for i, c in enumerate(p_own))
    g_map.update((c, own + len(p_own) + i) for i, c in enumerate(g_own))
    return _renumbered(codes.classes[0], p_map), _renumbered(codes.classes[1], g_map)


def _renumbered(rows: list, ids: dict) -> list:
    """``rows`` with each character ``c`` standing for class ``ids[c]`` (the same list when
    every class keeps its id)."""
    table = {}
    for c, i in ids.items():
        new = ord(code_point(i))
        if new != ord(c):
            table[ord(c)] = new
    return [r.translate(table) for r in rows] if table else rows


def _call_lists(items: list) -> list:
    """Each item's list of calls (lists are taken as they are: :func:`encode_calls` checks them)."""
    if set(map(type, items)) <= {list}:
        return items
    return [x if type(x) is list else as_calls(x) for x in items]


def _bounded(cmp: CallComparer, w: float, classes: tuple[list, list], tools: tuple[list, list],
             window: Callable[[int, int, int], tuple[list, list]]) -> list[tuple[float, float]]:
    """The in_order distances of a batch whose calls all weigh ``w``, from one character per
    call: its *exact class* (equal classes <=> an exact match of two plain calls; a call with
    errors of its own, or a gold with markers, is a class of its own) and, separately, its tool
    (``classes`` / ``tools``: per side, a str per pair).

    Every step of an alignment costs ``w`` (a gap, another tool) or at most ``w`` (the same
    tool, wrong arguments), and 0 for an exact match, so ``w *`` Levenshtein(tools) <=
    distance <= ``w *`` Levenshtein(classes), both in rapidfuzz's C++ (the tools only where
    the classes differ). Where the two bounds meet, that is the distance (the single-pair DP
    finds the same optimum). The other pairs are left with a window of calls once the common
    prefix and suffix of equal classes (exact matches, which the DP trims anyway) are cut:
    one call against one costs what the single-pair DP gives it, ``min(sub, 2w) = sub``; a
    larger window runs the single-pair DP :func:`in_order_distance` on the views
    ``window(pair, prefix, suffix)`` gives. The normalizer is ``w * max(len)``."""
    pc, gc = classes
    upper = cpdist(pc, gc, scorer=Levenshtein.distance).tolist()
    raw = [w * u for u in upper]
    todo = list(compress(count(), upper))
    pt, gt = tools
    lower = cpdist([pt[b] for b in todo], [gt[b] for b in todo], scorer=Levenshtein.distance).tolist() if todo else []
    price = PriceMemo(cmp)
    for b, lo_b in zip(todo, lower):
        if lo_b == upper[b]:
            continue
        p, g = pc[b], gc[b]
        lo = Prefix.similarity(p, g)  # equal classes are exact matches: trimmed as in_order_distance would
        hi = Postfix.similarity(p[lo:], g[lo:])
        if len(p) - lo - hi == 1 == len(g) - lo - hi and pt[b][lo] == gt[b][lo]:  # one call to the same tool each
            pv, gv = window(b, lo, hi)
            raw[b] = price(pv[0], gv[0])[0]
        else:
            raw[b] = in_order_distance(cmp, *window(b, lo, hi), price)
    return [(r, w * (a if a >= b else b)) for r, a, b in zip(raw, map(len, pc), map(len, gc))]
