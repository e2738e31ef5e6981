"""Benchmark: scoring 100k ten-step episodes (tool-call F1 and trajectory distance).

Run: ``.venv/bin/python -m bench.bench_scoring [--n 100000]``. Prints wall-clock seconds for
each metric and ratios against two baselines measured in the same run on the same episodes:
a plain ``==`` loop over the call lists, and ``json.dumps`` of the same calls.
"""
from __future__ import annotations

import argparse
import json
import random
import time
from typing import Any

from ek_agents.base import ToolSpec, tool_grammar
from ek_agents.core import FieldSpec
from ek_agents.toolcalls import ToolCallMetric
from ek_agents.trajectory import TrajectoryMetric

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


def _timed(fn: Any) -> tuple[float, Any]:
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000, help="episodes (default 100000)")
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--distinct", action="store_true", help="unique argument values per episode (no cache hits)")
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
        t, scores = _timed(lambda m=m: [m.score(p, g) for p, g in zip(preds, golds)])
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
    return figures


if __name__ == "__main__":
    main()
