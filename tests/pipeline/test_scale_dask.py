"""The evaluate-at-scale flow on a Dask LocalCluster of 2 worker processes, moto's S3 and a
Prefect API (issue 27, the small version): a few thousand trials in segments, each worker
writing its own; few objects; an all-stored re-run runs nothing; the audit passes."""
from __future__ import annotations

import pytest

from ek_agents.stages.audit import audit
from ek_agents.records.segments import RunSegments
from ek_agents.store import Store

from .conftest import PRICES, write_suite
from .test_s3 import s3_bucket  # noqa: F401 -- the fixture

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("prefect_api")]

AGENT = "tests.pipeline.pipeline_agents:scale_agent"


def test_a_few_thousand_trials_on_two_dask_workers_and_s3(s3_bucket, tmp_path, monkeypatch):  # noqa: F811
    from prefect.settings import PREFECT_API_URL

    from ek_agents_pipeline.flows.scale import evaluate_at_scale

    monkeypatch.setenv("PREFECT_API_URL", PREFECT_API_URL.value())  # the workers' API
    store = f"{s3_bucket}/scale"
    suite = write_suite(tmp_path / "s.jsonl", n=60)
    out = evaluate_at_scale(suite=suite, agent=AGENT, k=50, seed=1, store=store, run_id="dask1",
                            prices=PRICES, chunk_size=500, n_workers=2)
    assert out["trials"] == 3000 and out["ran"] == 3000 and out["chunks"] == 6
    assert len(out["workers"]) == 2  # both worker processes ran chunks
    st = Store(store)
    segs = RunSegments.load(st, "dask1")
    assert len(segs.pairs()) == 3000 and segs.duplicates() == 0
    objects = st.list("")
    assert len(objects) <= 3000 // 1000 + 30, objects  # segments + one index per chunk + docs
    man = st.read_manifest("dask1")
    assert {e.key for _, e in segs.entries} <= set(man["artifacts"])
    assert man["parameters"]["merged_segments"] == len(segs.entries)  # no segment re-read
    result = audit(st, "dask1")
    assert result.passed, result.problems
    again = evaluate_at_scale(suite=suite, agent=AGENT, k=50, seed=1, store=store,
                              run_id="dask1", prices=PRICES, chunk_size=500, n_workers=2)
    assert again["ran"] == 0 and again["chunks"] == 0 and again["results"] == out["results"]


def test_run_scale_on_the_command_line(tmp_path, monkeypatch, capsys):
    """``ek-agents run --scale``: the evaluate-at-scale flow from the command line (Dask
    worker processes from --max-workers); the options that flow would not use are refused,
    never dropped."""
    from prefect.settings import PREFECT_API_URL

    from ek_agents.cli import main

    monkeypatch.setenv("PREFECT_API_URL", PREFECT_API_URL.value())
    suite = write_suite(tmp_path / "s.jsonl", n=20)
    store = str(tmp_path / "store")
    base = ["run", "--scale", "--suite", suite, "--agent", AGENT, "--k", "20", "--store", store,
            "--prices", PRICES]
    assert main(base + ["--baseline", "b", "--sequential"]) == 2
    err = capsys.readouterr().err
    assert "--baseline, --sequential not used by the evaluate-at-scale flow" in err
    assert not (tmp_path / "store").exists() or not Store(store).list("")  # refused first
    assert main(base + ["--run-id", "cli1", "--max-workers", "2", "--chunk-size", "100"]) == 0
    out = capsys.readouterr().out
    st = Store(store)
    man = st.read_manifest("cli1")
    assert man["parameters"]["layout"] == "segments-streamed"
    segs = RunSegments.load(st, "cli1")
    assert len(segs.pairs()) == 400 and segs.duplicates() == 0
    assert "run cli1: manifest at" in out
    assert audit(st, "cli1").passed
