"""Issue 10's "Must show" at full size, with the store's *default* timeouts (slow: minutes).

Skipped unless ``EK_SOAK=1``; run with ``-s`` to see the figures::

    EK_SOAK=1 .venv/bin/python -m pytest -s -p no:cacheprovider tests/harness/test_store_soak.py

Times are printed next to the documented bound, never asserted (tests never assert wall-clock
times); the smaller versions in test_store_faults.py run in every test run.
"""
from __future__ import annotations

import os
import time

import pytest

from ek_agents import run_suite
from ek_agents.errors import StoreTimeout, StoreUnreachable
from ek_agents.store import Store, StoreSettings

from .test_store_faults import FLUSH, break_after, comparable, held_pairs, make_tasks
from .test_store_faults import slow_flaky_agent as flaky_agent
from .test_store_faults import proxy  # noqa: F401 -- the fixture
from .test_store_faults import test_no_temp_files_left_after_sigkills_and_resumes as sigkills

pytestmark = pytest.mark.skipif(os.environ.get("EK_SOAK") != "1", reason="set EK_SOAK=1")
N, K = 500, 2  # 1000 trials


@pytest.mark.parametrize("mode", ["refuse", "reset", "stall"])
def test_1000_trial_run_through_an_outage_with_default_settings(proxy, mode):
    url = f"s3://{proxy.bucket}/soak-{mode}"
    st = Store(url)
    bound = StoreSettings().worst_case_s + StoreSettings().attempt_limit()  # README: a run's bound
    break_after(st, "r1", 4, proxy, mode)
    t_start = time.monotonic()
    try:
        run_suite(flaky_agent, make_tasks(N), k=K, seed=5, persist=True, run_id="r1", rootdir=url,
                  max_concurrency=16, flush_s=FLUSH)
        raise AssertionError("the run did not fail")
    except (StoreUnreachable, StoreTimeout) as exc:
        err = exc
    failed_at = time.monotonic()
    outage_at = proxy.broken_at
    proxy.mode = "pass"
    resumed = run_suite(flaky_agent, make_tasks(N), k=K, seed=5, persist=True, run_id="r1", rootdir=url)
    whole = run_suite(flaky_agent, make_tasks(N), k=K, seed=5, persist=True, run_id="r2", rootdir=url)
    keys = held_pairs(st, "r1")
    expected = [(t.task_id, i) for t in make_tasks(N) for i in range(K)]
    print(f"\n[{mode}] {type(err).__name__} {failed_at - outage_at:.1f} s after the outage began "
          f"(run started {outage_at - t_start:.1f} s before it; documented bound {bound:.0f} s): {err}")
    print(f"[{mode}] resumed report == uninterrupted report: {comparable(resumed) == comparable(whole)}; "
          f"episodes {len(keys)}/{len(expected)}, lost {len(set(expected) - set(keys))}, "
          f"duplicated {len(keys) - len(set(keys))}")
    assert "\n" not in str(err)
    assert comparable(resumed) == comparable(whole) and keys == expected


def test_outage_shorter_than_the_default_retry_window(proxy):
    url = f"s3://{proxy.bucket}/soak-short"
    st = Store(url)
    break_after(st, "r1", 3, proxy, "refuse", back_after=8.0)
    report = run_suite(flaky_agent, make_tasks(N), k=K, seed=0, persist=True, run_id="r1", rootdir=url,
                       max_concurrency=16, flush_s=FLUSH)
    n = len(held_pairs(st, "r1"))
    print(f"\n[8 s refusal, retry_window {StoreSettings().retry_window:.0f} s] run completed: "
          f"{report.n_trials} trials, {n} episodes stored")
    assert report.n_trials == N * K == n


def test_ten_sigkills(tmp_path):
    sigkills(tmp_path, 10)
    print("\n[10 SIGKILLs + resume] .tmp-* left: 0")
