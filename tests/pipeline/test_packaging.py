"""The installed pipeline claims no generic top-level name: a user's project may have its own
``tasks.py`` and ``flows.py`` (an invoke or Celery habit) and ``ek-agents run`` still works."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from ek_agents.store import Store, run_key

from .conftest import write_suite

PROJECT_FILES = {
    # what an invoke / Celery project has; importing either as ek-agents' pipeline would fail
    "tasks.py": "def build(c):\n    raise SystemExit('the user project tasks.py was run')\n",
    "flows.py": "raise ImportError('the user project flows.py was imported')\n",
    "my_agent.py": textwrap.dedent("""
        def agent(task, *, seed=None):
            return task.input.upper()
        """),
}


def test_the_pipeline_is_installed_under_its_own_names():
    import ek_agents_examples
    import ek_agents_pipeline.flows
    import ek_agents_pipeline.tasks

    assert callable(ek_agents_pipeline.flows.evaluate_agent)
    assert callable(ek_agents_pipeline.tasks.grade)
    assert (ek_agents_examples.__spec__.submodule_search_locations
            and ek_agents_examples.__name__ == "ek_agents_examples")


@pytest.mark.usefixtures("prefect_api")
def test_ek_agents_run_works_from_a_project_with_its_own_tasks_and_flows(tmp_path):
    from prefect.settings import PREFECT_API_URL

    project = tmp_path / "project"
    project.mkdir()
    for name, text in PROJECT_FILES.items():
        (project / name).write_text(text)
    suite = write_suite(project / "suite.jsonl", n=4)
    store = str(tmp_path / "store")
    env = {**os.environ, "PREFECT_API_URL": PREFECT_API_URL.value()}
    env.pop("PYTHONPATH", None)
    r = subprocess.run([sys.executable, "-m", "ek_agents.cli", "run", "--suite", suite,
                        "--agent", "my_agent:agent", "--store", store, "--run-id", "mine"],
                       cwd=str(project), capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "| all | 4 | 4 | 1.000 |" in r.stdout
    manifest = Store(store).read_json(run_key("mine", "manifest"))
    assert manifest["agent"] == "my_agent:agent" and manifest["results"]["success_rate"] == 1.0
