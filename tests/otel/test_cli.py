"""``ek-agents run --capture otel`` and ``ek-agents ingest otlp`` end to end (no Prefect API:
the in-process plan), against the scripted server."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import ek_agents_examples
from ek_agents.records import documents
from ek_agents.base import TaskSpec
from ek_agents.bridge import episodes_from_otel
from ek_agents.cost import episode_dollars
from ek_agents.execution.harness import run_trials
from ek_agents.store import Store, run_key
from ek_agents_examples.otel import agents
from ek_agents_examples.otel.demo import SUITE_PATH

from .otlpjson import write_otlp

PRICES = str(Path(ek_agents_examples.__file__).parent / "prices.json")
CLI = "import sys\nfrom ek_agents.cli import main\nraise SystemExit(main(sys.argv[1:]))\n"


def _cli(tmp_path, *args, env_extra=None):
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    env["PREFECT_HOME"] = str(tmp_path / "prefect-home")
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-c", CLI, *args], capture_output=True, text=True,
                          env=env, timeout=240)


def _episodes(store: str, run_id: str) -> list:
    st = Store(store)
    return documents.episodes_of(documents.read_run_doc(st, documents.read_manifest(st, run_id), "episodes"))


def test_run_capture_otel_on_the_command_line(tmp_path, server):
    store = str(tmp_path / "st")
    got = _cli(tmp_path, "run", "--suite", str(SUITE_PATH), "--agent",
               "ek_agents_examples.otel.demo:agent", "--capture", "otel", "--k", "2", "--seed",
               "9000", "--prices", PRICES, "--check", "output", "--store", store, "--run-id", "cli",
               env_extra={"EK_OPENAI_BASE_URL": server.base_url})
    assert got.returncode == 0, got.stderr[-2000:]
    eps = _episodes(store, "cli")
    assert len(eps) == 12
    for ep in eps:
        sent = server.sent[f"{ep.task_id}.{ep.run.seed}"]
        assert [(c.model, c.input_tokens, c.cached_input_tokens) for c in ep.cost.calls] == \
            [(s.model, s.input_tokens, s.cached_input_tokens) for s in sent]
    manifest = Store(store).read_json(run_key("cli", "manifest"))
    assert manifest["parameters"]["capture"] == "otel"
    assert "gpt-4o-mini-2024-07-18" in got.stdout  # the per-model breakdown is shown


def test_ingest_otlp_on_the_command_line(tmp_path, server, exporter, prices):
    agents.instrument_openai_v2()
    tasks = [TaskSpec(f"i{i}", input="x") for i in range(4)]
    eps = run_trials(agents.pydantic_ai_agent, tasks, k=2, seed=9100, capture="otel")
    path = write_otlp(tmp_path / "traces.jsonl", list(exporter.get_finished_spans()), ids="base64")
    store = str(tmp_path / "st")
    suite = tmp_path / "suite.jsonl"  # the traces carry no verdict: graded against a suite
    suite.write_text("".join(json.dumps({"task_id": t.task_id, "gold": f"SUMMARY({t.task_id})",
                                         "checker": "output"}) + "\n" for t in tasks))
    got = _cli(tmp_path, "ingest", "otlp", str(path), "--suite", str(suite), "--prices", PRICES,
               "--store", store, "--run-id", "ing")
    assert got.returncode == 0, got.stderr[-2000:]
    ingested = {(e.task_id, e.meta["trial"]): e for e in _episodes(store, "ing")}
    assert len(ingested) == 8
    for ep in eps:
        off = ingested[(ep.task_id, ep.meta["trial"])]
        assert off.trajectory == ep.trajectory and off.cost.calls == ep.cost.calls
        assert episode_dollars(off, prices=prices) == episode_dollars(ep, prices=prices)
    assert len(episodes_from_otel(path)) == 8
