"""Streaming aggregation (issue 27): the report from segments, trial by trial, equals the
in-memory path's on thousands of trials (priced, sliced, errored, mixed outcomes)."""
from __future__ import annotations

import random

import pytest

from ek_agents.base import Cost, Episode, RunProvenance, TaskSpec
from ek_agents.harness import run_trials
from ek_agents.prices import load_prices
from ek_agents.reporting import graded_report
from ek_agents.store import Store
from ek_agents.stages.streaming import ExactSum, StreamingReport, stream_report

from tests.pipeline.conftest import PRICES

MODEL = "gpt-4o-mini-2024-07-18"


def _agent(task, *, seed):
    rng = random.Random(f"{task.task_id}/{seed}")
    if rng.random() < 0.03:
        raise RuntimeError("endpoint down")
    ok = rng.random() < (0.2 + 0.6 * (int(task.task_id[1:]) % 5) / 4)
    return Episode(task.task_id, output=task.input.upper() if ok else "?",
                   cost=Cost(input_tokens=900 + rng.randrange(300), output_tokens=80,
                             latency_s=rng.random()) if rng.random() < 0.9 else None,
                   run=RunProvenance(model=MODEL, temperature=0.7))


def _tasks(n):
    return [TaskSpec(f"t{i:03d}", input=f"w{i}", gold=f"W{i}",
                     slice=("easy", "hard", None)[i % 3]) for i in range(n)]


def test_exact_sum_is_fsum():
    rng = random.Random(3)
    xs = [rng.uniform(-1, 1) * 10 ** rng.randrange(-8, 8) for _ in range(5000)]
    s = ExactSum()
    s.add_all(xs)
    import math
    assert s.value == math.fsum(xs) and len(s.partials) < 40


@pytest.mark.parametrize("priced", [True, False])
def test_streamed_report_equals_the_in_memory_report(tmp_path, priced):
    tasks = _tasks(60)
    run = RunProvenance(seed=5, model=MODEL)
    eps = run_trials(_agent, tasks, k=50, seed=5, run=run, store=str(tmp_path / "s"),
                     run_id="r")
    assert len(eps) == 3000
    prices = load_prices(PRICES) if priced else None
    _, metrics, report = graded_report(eps, tasks, k=8, check=None, metrics=None, price=None,
                                       prices=prices, seed=7, run=run)
    s_metrics, s_report, n = stream_report(Store(str(tmp_path / "s")), "r", tasks, k=8,
                                           prices=prices, seed=7, run=run)
    assert n == 3000
    assert s_metrics.to_dict() == metrics.to_dict()
    assert s_report.to_dict() == report.to_dict()
    assert report.detail["errors"] and report.per_slice and 0 < report.pass_hat_k < 1


def test_state_is_per_task_not_per_trial():
    tasks = _tasks(10)
    acc = StreamingReport(tasks, k=2)
    for trial in range(200):
        acc.add_episodes(Episode(t.task_id, output="?", meta={"trial": trial},
                                 cost=Cost(input_tokens=1)) for t in tasks)
    size = acc.state_size()
    for trial in range(200, 2000):
        acc.add_episodes(Episode(t.task_id, output="?", meta={"trial": trial},
                                 cost=Cost(input_tokens=1)) for t in tasks)
    assert acc.state_size() == size and acc.n == 20000


def test_segment_summaries_merge_to_the_in_memory_report(tmp_path):
    """Each segment's summary (graded as it is written, in its index entry) merged gives the
    in-memory report; a segment with a dropped trial is read again instead."""
    from ek_agents.records import segments as sg
    from ek_agents.harness import store_trials
    from ek_agents.stages.streaming import merged_report, segment_summarizer

    tasks = _tasks(40)
    run = RunProvenance(seed=2, model=MODEL)
    prices = load_prices(PRICES)
    st = Store(str(tmp_path / "s"))
    pairs = [(t.task_id, i) for t in tasks for i in range(30)]
    summarize = segment_summarizer(tasks, k=4, prices=prices, seed=3, run=run)
    for half in (pairs[:700], pairs[700:]):  # two writers
        assert store_trials(_agent, tasks, half, k=30, store=st, run_id="r", seed=2, run=run,
                            summarize=summarize, keep=False) == []
    eps = run_trials(_agent, tasks, k=30, seed=2, run=run)
    _, metrics, report = graded_report(eps, tasks, k=4, check=None, metrics=None, price=None,
                                       prices=prices, seed=3, run=run)
    m, r, counts = merged_report(st, "r", tasks, k=4, prices=prices, seed=3, run=run)
    assert (counts["trials"], counts["merged"], counts["read"]) == (1200, 2, 0)
    assert m.to_dict() == metrics.to_dict() and r.to_dict() == report.to_dict()
    segs = sg.RunSegments.load(st, "r")
    segs.drop([pairs[5]])
    m2, r2, counts2 = merged_report(st, "r", tasks, k=4, prices=prices, seed=3, run=run)
    assert (counts2["trials"], counts2["merged"], counts2["read"]) == (1199, 1, 1)
    full = merged_report(st, "r", tasks, k=4, prices=prices, seed=3, run=run, summaries=False)
    assert r2.to_dict() == full[1].to_dict() and full[2]["read"] == 2
