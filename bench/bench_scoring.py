"""Benchmark: scoring 100k ten-step episodes (tool-call F1 and trajectory distance).

Run: ``.venv/bin/python -m bench.bench_scoring [--n 100000]``. Prints wall-clock seconds for
each metric's corpus path (``score_batch``, what ``evaluate`` uses) and ratios against
baselines measured in the same run on the same episodes: a plain ``==`` loop over the call
lists, ``json.dumps`` of the same calls, and -- the issue's row -- rapidfuzz's Levenshtein
distance on the tool-name sequences (``rapidfuzz``: with the names read from the same call
lists; ``rapidfuzz_prebuilt``: on name lists built beforehand) against
``evaluate(preds, golds, {"d": TrajectoryMetric("in_order")})``, checked equal to the
single-pair ``score`` on every pair (``in_order_pairs_differing`` must be 0). That row runs
through ``ek_agents.scoring.callcodes`` (one code point per call, from the C extension) and rapidfuzz;
bench/PROFILE-scoring.md ("Round 4") has where its time goes.
"""
from __future__ import annotations

import argparse
import json
import math
import random
import time
from typing import Any

from ek_agents import evaluate
from ek_agents.base import ToolSpec, tool_grammar
from ek_agents.core import FieldSpec
from ek_agents.scoring.toolcalls import ToolCallMetric
from ek_agents.scoring.trajectory import TrajectoryMetric

GRAMMAR = tool_grammar(
    ToolSpec("search", {"q": FieldSpec("q", "string", required=True), "limit": FieldSpec("limit", "integer")}),
    ToolSpec("get_order", {"order_id": FieldSpec("order_id", "string", required=True)}),
    ToolSpec("refund", {"order_id": FieldSpec("order_id", "string", required=True),
                        "amount": FieldSpec("amount", "number", importance=5.0)}, destructive=True),
    ToolSpec("send_email", {"to": FieldSpec("to", "string"), "body": FieldSpec("body", "string")}),
    ToolSpec("answer", {"text": FieldSpec("text", "string")}),
)
WORDS = ["shoes", "red dress", "order status", "refund policy", "Blue Hat", "socks"]


def _call(rnd: random.Random, tag: str = "") -> tuple:
    tool = rnd.choice(["search", "search", "get_order", "refund", "send_email", "answer"])
    if tool == "search":
        return (tool, {"q": rnd.choice(WORDS) + tag, "limit": rnd.choice([5, 10])})
    if tool == "get_order":
        return (tool, {"order_id": f"o-{rnd.randint(1, 50)}{tag}"})
    if tool == "refund":
        return (tool, {"order_id": f"o-{rnd.randint(1, 50)}{tag}", "amount": rnd.choice([5, 12.5, 20])})
    if tool == "send_email":
        return (tool, {"to": "ann@example.com", "body": rnd.choice(WORDS) + tag})
    return (tool, {"text": rnd.choice(WORDS) + tag})


def make_episodes(n: int, steps: int = 10, seed: int = 0, distinct: bool = False) -> tuple[list, list]:
    """``n`` (pred, gold) pairs of ``steps``-call episodes: half exact, half perturbed
    (swapped, wrong argument, extra or missing call). ``distinct`` makes every episode's
    argument values unique (no call repeats across episodes: the worst case for caching)."""
    rnd = random.Random(seed)
    preds, golds = [], []
    for e in range(n):
        tag = f" #{e}" if distinct else ""
        gold = [_call(rnd, tag) for _ in range(steps)]
        pred = [(t, dict(a)) for t, a in gold]
        r = rnd.random()
        if r < 0.125:
            i = rnd.randrange(steps - 1)
            pred[i], pred[i + 1] = pred[i + 1], pred[i]
        elif r < 0.25:
            t, a = pred[rnd.randrange(steps)]
            k = next(iter(a))
            a[k] = "wrong"
        elif r < 0.375:
            pred.insert(rnd.randrange(steps), _call(rnd, tag))
        elif r < 0.5:
            pred.pop(rnd.randrange(steps))
        preds.append(pred)
        golds.append(gold)
    return preds, golds


def _timed(fn: Any, repeat: int = 1) -> tuple[float, Any]:
    """(the fastest of ``repeat`` runs in seconds, the last result)."""
    best = math.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def in_order_vs_rapidfuzz(preds: list, golds: list, repeat: int = 3, check: bool = True) -> dict:
    """The issue's row: ``evaluate`` with ``TrajectoryMetric("in_order")`` vs rapidfuzz's
    Levenshtein on the tool-name sequences (min of ``repeat``), and the single-pair check."""
    out: dict[str, Any] = {}
    try:
        from rapidfuzz.distance import Levenshtein
    except ImportError:
        print("  in_order vs rapidfuzz: skipped (pip install rapidfuzz; it is in the [dev] extra)")
        return out
    lev = Levenshtein.distance
    t_rf, _ = _timed(lambda: [lev([c[0] for c in p], [c[0] for c in g]) for p, g in zip(preds, golds)], repeat)
    names_p = [[c[0] for c in p] for p in preds]
    names_g = [[c[0] for c in g] for g in golds]
    t_rf0, _ = _timed(lambda: [lev(a, b) for a, b in zip(names_p, names_g)], repeat)
    t_ev, agg = _timed(lambda: evaluate(preds, golds, {"d": TrajectoryMetric("in_order")})["d"], repeat)
    out.update({"rapidfuzz_s": t_rf, "rapidfuzz_prebuilt_s": t_rf0, "in_order_evaluate_s": t_ev,
                "in_order_evaluate_vs_rapidfuzz": t_ev / t_rf, "in_order_evaluate_vs_rapidfuzz_prebuilt": t_ev / t_rf0,
                "in_order_evaluate_aggregate": agg})
    if check:
        m = TrajectoryMetric("in_order")
        batch = m.score_batch(preds, golds)
        t_single, single = _timed(lambda: [m.score(p, g) for p, g in zip(preds, golds)])
        out["in_order_single_pair_loop_s"] = t_single
        out["in_order_pairs_differing"] = sum(
            not (math.isclose(a.detail["distance"], b.detail["distance"], rel_tol=1e-12, abs_tol=1e-12)
                 and math.isclose(a.detail["max_distance"], b.detail["max_distance"], rel_tol=1e-12, abs_tol=1e-12))
            for a, b in zip(batch, single))
    print(f"  in_order via evaluate  {t_ev:7.3f} s   rapidfuzz Levenshtein on names {t_rf:.3f} s "
          f"(x{t_ev / t_rf:.1f}); on prebuilt name lists {t_rf0:.3f} s (x{t_ev / t_rf0:.1f})"
          + (f"; single-pair loop {out['in_order_single_pair_loop_s']:.2f} s, pairs differing: "
             f"{out['in_order_pairs_differing']}" if check else ""))
    return out


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000, help="episodes (default 100000)")
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--distinct", action="store_true", help="unique argument values per episode (no cache hits)")
    ap.add_argument("--repeat", type=int, default=3, help="runs of the in_order row (its minimum is reported)")
    ap.add_argument("--no-check", action="store_true", help="skip the single-pair equality check of the in_order row")
    args = ap.parse_args(argv)
    preds, golds = make_episodes(args.n, args.steps, args.seed, args.distinct)

    t_eq, n_equal = _timed(lambda: sum(p == g for p, g in zip(preds, golds)))
    t_json, _ = _timed(lambda: [json.dumps(p) + json.dumps(g) for p, g in zip(preds, golds)])

    figures: dict[str, Any] = {"episodes": args.n, "steps": args.steps, "seed": args.seed,
                               "distinct": args.distinct,
                               "baseline_eq_s": t_eq, "baseline_json_s": t_json,
                               "identical_pairs": n_equal}
    metrics = {"tool_call": ToolCallMetric("call", grammar=GRAMMAR),
               "tool_call_arg": ToolCallMetric("arg", grammar=GRAMMAR),
               "trajectory_in_order": TrajectoryMetric("in_order", grammar=GRAMMAR),
               "trajectory_any_order": TrajectoryMetric("any_order", grammar=GRAMMAR)}
    for name, m in metrics.items():
        t, scores = _timed(lambda m=m: m.score_batch(preds, golds))
        figures[f"{name}_s"] = t
        figures[f"{name}_aggregate"] = m.aggregate(scores)
        figures[f"{name}_vs_eq"] = t / t_eq if t_eq else None
        figures[f"{name}_vs_json"] = t / t_json if t_json else None

    print(f"scoring {args.n:,} episodes of {args.steps} steps{' (distinct values)' if args.distinct else ''} "
          f"(baselines: == loop {t_eq:.3f} s, json.dumps {t_json:.3f} s)")
    for name in metrics:
        print(f"  {name:22s} {figures[name + '_s']:7.2f} s   "
              f"x{figures[name + '_vs_json']:6.1f} json.dumps   x{figures[name + '_vs_eq']:7.1f} ==   "
              f"aggregate {figures[name + '_aggregate']:.4f}")
    figures.update(in_order_vs_rapidfuzz(preds, golds, args.repeat, not args.no_check))
    return figures


if __name__ == "__main__":
    main()
