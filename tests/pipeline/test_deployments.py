"""Deployments: prefect.yaml and serve.py define what they say (the real-server runs of them
are in ``test_prefect_ui.py``, beside the UI conventions, on one server)."""
from __future__ import annotations

import sys

import yaml

from .conftest import ROOT

LOCAL = {"nightly", "manual", "audit", "promote"}


def test_prefect_yaml_names_real_flows_and_valid_parameters():
    from prefect.flows import load_flow_from_entrypoint

    spec = yaml.safe_load((ROOT / "deployments" / "prefect.yaml").read_text())
    names = {d["name"]: d for d in spec["deployments"]}
    # two groups of the same four: the checkout on this box, and a clone on a remote worker
    assert set(names) == LOCAL | {f"{n}-remote" for n in LOCAL} | {"scale", "scale-remote"} | {
        "monitor-production", "monitor-production-remote"}
    assert names["nightly"]["schedules"][0]["cron"] == "0 3 * * *"
    assert names["nightly-remote"]["schedules"] == names["nightly"]["schedules"]
    assert all(names[n]["work_pool"]["name"] == "ek-agents" for n in LOCAL)
    assert all(names[f"{n}-remote"]["work_pool"]["name"] == "ek-agents-remote" for n in LOCAL)
    for d in names.values():
        path, _, fn = d["entrypoint"].partition(":")
        flow = load_flow_from_entrypoint(str(ROOT / path) + ":" + fn)
        given = {name: "r1" for name in flow.parameters.required}  # the run form asks for these
        flow.validate_parameters({**given, **(d.get("parameters") or {})})  # raises on a bad one
        assert flow.parameters.required == (["run_id", "name"] if "promote" in d["name"] else
                                            ["source", "series"] if "monitor" in d["name"] else [])
        assert flow.timeout_seconds and flow.timeout_seconds > 0
    assert (ROOT / names["nightly"]["parameters"]["suite"]).exists()
    assert names["promote"]["entrypoint"].endswith(":promote_baseline")


def test_prefect_yaml_pull_steps_local_and_git():
    text = (ROOT / "deployments" / "prefect.yaml").read_text()
    spec = yaml.safe_load(text)
    assert "definitions" in spec and "&pull_git" in text and "*pull_local" in text  # anchors
    local = spec["pull"]
    assert [next(iter(s)) for s in local] == ["prefect.deployments.steps.set_working_directory"]
    remote = {d["name"]: d for d in spec["deployments"]}["manual-remote"]["pull"]
    assert [next(iter(s)) for s in remote] == ["prefect.deployments.steps.git_clone",
                                              "prefect.deployments.steps.run_shell_script",
                                              "prefect.deployments.steps.set_working_directory"]
    clone, install, cd = (next(iter(s.values())) for s in remote)
    assert clone["repository"] == "{{ $EK_AGENTS_REPO }}"  # read on the worker, at run time
    assert install["directory"] == cd["directory"] == "{{ clone.directory }}"
    assert "pip install" in install["script"]


def test_serve_builds_the_four_deployments_under_names_prefect_deploy_never_uses():
    sys.path.insert(0, str(ROOT / "deployments"))
    try:
        import serve
    finally:
        sys.path.pop(0)
    deps = serve.deployments()
    assert set(deps) == LOCAL
    assert {d.name for d in deps.values()} == {f"{n}-served" for n in LOCAL}
    spec = yaml.safe_load((ROOT / "deployments" / "prefect.yaml").read_text())
    assert not {d.name for d in deps.values()} & {d["name"] for d in spec["deployments"]}
    assert deps["nightly"].schedules and deps["manual"].parameters == {"k": 1}
