"""Times agentevals' trajectory match (strict / unordered) and DeepEval's ToolCorrectnessMetric
on the episodes in a JSON file; prints one JSON line ``{name: seconds | "skipped: why"}``.

Run by ``bench.bench_toolcalls`` with a Python that has those packages (they need not be
importable beside ek-agents: ``EK_BENCH_COMPARE_PYTHON=/path/to/python``). Reads
``{"preds": [[[tool, args], ...], ...], "golds": [...]}``; imports nothing from ek_agents.
"""
from __future__ import annotations

import json
import os
import sys
import time


def _messages(calls: list) -> list:
    return [{"role": "user", "content": "go"},
            {"role": "assistant", "content": "", "tool_calls": [
                {"id": f"c{i}", "type": "function", "function": {"name": t, "arguments": json.dumps(a)}}
                for i, (t, a) in enumerate(calls)]},
            {"role": "assistant", "content": "done"}]


def _agentevals(preds: list, golds: list, mode: str) -> float:
    from agentevals.trajectory.match import create_trajectory_match_evaluator

    ev = create_trajectory_match_evaluator(trajectory_match_mode=mode)
    P, G = [_messages(p) for p in preds], [_messages(g) for g in golds]
    t0 = time.perf_counter()
    for p, g in zip(P, G):
        ev(outputs=p, reference_outputs=g)
    return time.perf_counter() - t0


def _deepeval(preds: list, golds: list) -> float:
    os.environ.setdefault("DEEPEVAL_TELEMETRY_OPT_OUT", "YES")
    from deepeval.metrics import ToolCorrectnessMetric
    from deepeval.test_case import LLMTestCase, ToolCall, ToolCallParams

    from deepeval.models import DeepEvalBaseLLM

    class NoLLM(DeepEvalBaseLLM):  # the metric's deterministic part needs no model; fail if asked
        def __init__(self) -> None:
            self.model = None

        def load_model(self):
            return None

        def generate(self, *a, **k):
            raise RuntimeError("ToolCorrectnessMetric asked an LLM; the bench measures the deterministic match")

        async def a_generate(self, *a, **k):
            return self.generate()

        def get_model_name(self) -> str:
            return "none"

    metric = ToolCorrectnessMetric(evaluation_params=[ToolCallParams.INPUT_PARAMETERS], include_reason=False,
                                   async_mode=False, model=NoLLM())
    cases = [LLMTestCase(input="go", actual_output="done",
                         tools_called=[ToolCall(name=t, input_parameters=a) for t, a in p],
                         expected_tools=[ToolCall(name=t, input_parameters=a) for t, a in g])
             for p, g in zip(preds, golds)]
    t0 = time.perf_counter()
    for c in cases:
        metric.measure(c)
    return time.perf_counter() - t0


def main() -> None:
    data = json.load(open(sys.argv[1]))
    preds, golds = data["preds"], data["golds"]
    out: dict = {}
    for name, fn in [("agentevals_strict", lambda: _agentevals(preds, golds, "strict")),
                     ("agentevals_unordered", lambda: _agentevals(preds, golds, "unordered")),
                     ("deepeval_tool_correctness", lambda: _deepeval(preds, golds))]:
        try:
            out[name] = min(fn() for _ in range(int(data.get("repeat", 1))))
        except ImportError as exc:
            out[name] = f"skipped: {exc}"
    print(json.dumps(out))


if __name__ == "__main__":
    main()
