"""Issue 9 (part B) and issue 11's stored documents: an audit that covers everything a run
records, verified reads, promote --replace, and typed errors for malformed stored documents.

One module-scoped store holds three runs of the evaluate plan (``base`` promoted as ``shop-small``, a gated
``same`` that passed and a gated ``worse`` that failed); each test forges a copy of it.
"""
from __future__ import annotations

import shutil

import pytest
import yaml

from ek_agents.records import baselines, documents as run_documents
from ek_agents.stages import evaluate as stages
from ek_agents.stages.audit import audit
from ek_agents.cli import main
from ek_agents.errors import (AuditFailed, BaselineError, DigestMismatch, DocumentError,
                              GateFailed, InvalidInput)
from ek_agents.records.segments import RunSegments
from ek_agents.store import Store, episodes_prefix, run_key

from ..harness.layout import to_per_trial_files
from .conftest import AGENT, FLAKY_AGENT, PRICES, ROOT, write_suite

pytestmark = pytest.mark.usefixtures("prefect_api")

BASELINE = "shop-small"


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    """Built by the in-process plan (``ek_agents.localrun``): its stage documents are the
    flow's byte for byte (``test_cli_local.py``), without three Prefect flow runs' overhead."""
    from ek_agents.localrun import evaluate_agent

    def promote_baseline(run_id: str, name: str, store: str) -> None:
        baselines.promote_baseline(Store(store), run_id, name)

    where = tmp_path_factory.mktemp("audit-trust")
    store = str(where / "store")
    big = write_suite(where / "big.jsonl", n=20)
    common = dict(suite=big, k=3, store=store, prices=PRICES)
    evaluate_agent(agent=AGENT, seed=1, run_id="base", **common)
    promote_baseline(run_id="base", name=BASELINE, store=store)
    evaluate_agent(agent=AGENT, seed=2, run_id="same", baseline=BASELINE, **common)
    with pytest.raises(GateFailed):
        evaluate_agent(agent=FLAKY_AGENT, seed=2, run_id="worse", baseline=BASELINE, **common)
    return store


@pytest.fixture
def st(pristine, tmp_path) -> Store:
    """A copy of the pristine store, for this test to forge."""
    shutil.copytree(pristine, tmp_path / "store")
    return Store(str(tmp_path / "store"))


def _forge(st: Store, run_id: str, name: str, edit) -> None:
    """Rewrite a run document and patch its new sha256 into the manifest (a careful forger)."""
    key = run_key(run_id, name)
    doc = st.read_json(key)
    doc = edit(doc) or doc
    sha = st.write_json(key, doc)
    man = st.read_manifest(run_id)
    man["artifacts"][key] = sha
    st.write_manifest(run_id, man)


def _edit_manifest(st: Store, run_id: str, edit) -> None:
    man = st.read_manifest(run_id)
    edit(man)
    st.write_manifest(run_id, man)


def _cli(capsys, *args: str) -> tuple[int, str]:
    """Run ``ek-agents`` in-process: (exit code, last line of stderr)."""
    capsys.readouterr()
    code = main(list(args))
    err = capsys.readouterr().err.strip().splitlines()
    return code, (err[-1] if err else "")


def test_the_pristine_runs_pass_their_audit(st):
    for run_id in ("base", "same", "worse"):
        result = audit(st, run_id)
        assert result.passed, result.problems
    assert audit(st, baseline=BASELINE).passed


# --------------------------------------------------------------------------- the audit deployment

def _audit_deployment() -> dict:
    spec = yaml.safe_load((ROOT / "deployments" / "prefect.yaml").read_text())
    return next(d for d in spec["deployments"] if d["name"] == "audit")


def test_audit_deployment_with_run_id_audits_that_run(st):
    """`prefect deployment run audit-run/audit -p run_id=X` audits X (old: the default
    baseline won and the baseline's run was audited, and passed)."""
    from ek_agents_pipeline.flows import audit_run

    dep = _audit_deployment()
    _forge(st, "worse", "gate", lambda g: {**g, "passed": True, "reasons": []})
    params = {**(dep.get("parameters") or {}), "run_id": "worse", "store": st.url}
    with pytest.raises(AuditFailed, match=r"run 'worse'.*gate"):
        audit_run(**params)
    params["run_id"] = "same"
    assert audit_run(**params)["run_id"] == "same"
    # the schedule audits the baseline's run
    sched = dep["schedules"][0].get("parameters") or {}
    assert audit_run(**sched, store=st.url)["run_id"] == "base"
    # both at once is refused, never one silently overriding the other
    with pytest.raises(InvalidInput, match="exactly one"):
        audit_run(run_id="same", baseline=BASELINE, store=st.url)


def test_serve_builds_the_audit_deployment_without_a_default_target():
    import sys

    sys.path.insert(0, str(ROOT / "deployments"))
    try:
        import serve
    finally:
        sys.path.pop(0)
    dep = serve.deployments()["audit"]
    assert not {"run_id", "baseline"} & set(dep.parameters or {})
    assert dep.schedules[0].parameters == {"baseline": BASELINE}


# --------------------------------------------------------------------------- forgeries

def test_forged_gate_json_fails_the_audit_naming_it(st, capsys):
    _forge(st, "worse", "gate", lambda g: {**g, "passed": True, "reasons": []})
    result = audit(st, "worse")
    assert not result.passed
    assert any(p.startswith("gate.json.passed: recorded True, recomputed False") for p in result.problems)
    code, line = _cli(capsys, "audit", "worse", "--store", st.url)
    assert code == 1 and line.startswith("ek-agents: audit FAILED") and "gate.json" in line


def test_forged_gate_in_manifest_and_gate_json_fails_the_audit(st):
    _forge(st, "worse", "gate", lambda g: {**g, "passed": True, "reasons": []})
    _edit_manifest(st, "worse", lambda m: m["gate"].update(passed=True, reasons=[]))
    problems = audit(st, "worse").problems
    assert any(p.startswith("manifest.gate.passed") for p in problems)
    assert any(p.startswith("gate.json.passed") for p in problems)


@pytest.mark.parametrize("name", ["report", "prices", "gate", "baseline", "graded"])
def test_removed_artifact_entry_fails_the_audit_naming_it(st, capsys, name):
    key = run_key("worse", name)
    _edit_manifest(st, "worse", lambda m: m["artifacts"].pop(key))
    result = audit(st, "worse")
    assert not result.passed and any(key in p and "not listed in the manifest" in p
                                     for p in result.problems), result.problems
    code, line = _cli(capsys, "audit", "worse", "--store", st.url)
    assert code == 1 and key in line


def _as_per_trial_files(st: Store, run_id: str) -> None:
    """The run as earlier versions stored it: one file per trial, each listed in its manifest
    (in place of its segments and their index)."""
    listed = RunSegments.load(st, run_id).digests()
    to_per_trial_files(st, run_id)

    def edit(man: dict) -> None:
        for key in listed:
            del man["artifacts"][key]
        man["artifacts"].update({k: st.digest(k) for k in st.list(episodes_prefix(run_id))})

    _edit_manifest(st, run_id, edit)
    assert audit(st, run_id).passed  # read and audited as such


@pytest.mark.parametrize("layout", ["segments", "per-trial"])
def test_removed_trial_entry_fails_the_audit(st, layout):
    if layout == "per-trial":
        _as_per_trial_files(st, "same")
        key = "runs/same/episodes/t3/1.json"
    else:
        key = RunSegments.load(st, "same").pairs()[("t3", 1)].key
    _edit_manifest(st, "same", lambda m: m["artifacts"].pop(key))
    assert any(key in p for p in audit(st, "same").problems)


@pytest.mark.parametrize("field, edit", [
    ("manifest.agent", lambda m: m.update(agent="tests.pipeline.pipeline_agents:worse_agent")),
    ("manifest.provenance", lambda m: m["provenance"].update(model="gpt-5")),
    ("manifest.parameters.k", lambda m: m["parameters"].update(k=2)),
    ("manifest.suite", lambda m: m["suite"].update(version="2")),
    ("manifest.status", lambda m: m.update(status="failed")),
])
def test_edited_manifest_field_fails_the_audit_naming_it(st, capsys, field, edit):
    _edit_manifest(st, "same", edit)
    result = audit(st, "same")
    assert not result.passed and any(field in p for p in result.problems), result.problems
    code, line = _cli(capsys, "audit", "same", "--store", st.url)
    assert code == 1 and line.startswith("ek-agents: audit FAILED")


def test_forged_baseline_provenance_fails_the_audit(st, capsys):
    doc = st.load_baseline(BASELINE)
    doc["run"]["suite_version"] = "2"  # what the gate's comparability check reads
    st.save_baseline(BASELINE, doc)
    result = audit(st, baseline=BASELINE)
    assert not result.passed
    assert any(p.startswith(f"baseline {BASELINE!r}: run.suite_version") for p in result.problems)
    code, line = _cli(capsys, "audit", "--baseline", BASELINE, "--store", st.url)
    assert code == 1 and "run.suite_version" in line


def test_misfiled_and_missing_trials_fail_the_audit(st):
    _as_per_trial_files(st, "same")
    a, b = "runs/same/episodes/t1/0.json", "runs/same/episodes/t2/0.json"
    data_b = st.read_bytes(b)
    st.write_bytes(a, data_b)  # another task's trial under t1's key, digests patched
    _edit_manifest(st, "same", lambda m: m["artifacts"].update({a: m["artifacts"][b]}))
    problems = audit(st, "same").problems
    assert any(p.startswith(f"artifact {a} holds task 't2' trial 0") for p in problems), problems


def test_episodes_json_with_a_missing_trial_fails_the_audit(st):
    _forge(st, "same", "episodes", lambda d: {**d, "episodes": d["episodes"][1:]})
    problems = audit(st, "same").problems
    assert any("trials per task" in p for p in problems), problems


@pytest.mark.parametrize("damage", [b"[]", b"not json", b'{"run_id": 5}'])
def test_damaged_manifest_is_an_audit_failure_naming_it(st, capsys, damage):
    st.write_bytes(run_key("same", "manifest"), damage)
    result = audit(st, "same")
    assert not result.passed and "runs/same/manifest.json" in result.problems[0]
    code, line = _cli(capsys, "audit", "same", "--store", st.url)
    assert code == 1 and "runs/same/manifest.json" in line


def test_damaged_baseline_is_an_audit_failure_naming_it(st, capsys):
    st.write_bytes("baselines/shop-small.json", b"1.5")
    code, line = _cli(capsys, "audit", "--baseline", BASELINE, "--store", st.url)
    assert code == 1 and "baselines/shop-small.json" in line


def test_damaged_artifact_is_an_audit_failure_naming_it(st, capsys):
    _edit_manifest(st, "same", lambda m: m["artifacts"].update(
        {run_key("same", "metrics"): st.write_bytes(run_key("same", "metrics"), b"{oops")}))
    code, line = _cli(capsys, "audit", "same", "--store", st.url)
    assert code == 1 and "runs/same/metrics.json" in line


# --------------------------------------------------------------------------- verified reads

def test_an_edited_report_is_refused_by_gate_promote_and_report(st, capsys):
    # one line of report.json edited: the worse run now "passes" the gate (old: exit 0)
    key = run_key("worse", "report")
    st.write_json(key, {**st.read_json(key), "success_rate": 0.9})
    for args in (["gate", "worse", "--baseline", BASELINE], ["report", "worse"],
                 ["report", "worse", "--json"], ["report", "worse", "same"],
                 ["promote", "worse", "--name", "forged"]):
        code, line = _cli(capsys, *args, "--store", st.url)
        assert code == 1, args
        assert "runs/worse/report.json" in line and "changed after the run" in line, (args, line)
    assert st.load_baseline("forged") is None
    with pytest.raises(DigestMismatch, match="report.json"):
        baselines.promote(st, "worse", "forged")
    with pytest.raises(DigestMismatch):
        stages.gate_run(st, "worse", BASELINE)


def test_a_report_whose_manifest_entry_was_removed_is_refused(st):
    _edit_manifest(st, "same", lambda m: m["artifacts"].pop(run_key("same", "report")))
    with pytest.raises(DigestMismatch, match="not listed in the run's manifest"):
        run_documents.run_report(st, "same")


# --------------------------------------------------------------------------- promote --replace

def test_promote_onto_an_existing_name_needs_replace_and_keeps_the_old_one(st, capsys):
    old = st.load_baseline(BASELINE)
    code, line = _cli(capsys, "promote", "same", "--name", BASELINE, "--store", st.url)
    assert code == 2 and "already exists" in line and "--replace" in line
    assert st.load_baseline(BASELINE) == old
    with pytest.raises(BaselineError, match="already exists"):
        baselines.promote(st, "same", BASELINE)
    code, _ = _cli(capsys, "promote", "same", "--name", BASELINE, "--replace", "--store", st.url)
    assert code == 0
    new = st.load_baseline(BASELINE)
    assert new["report"]["detail"]["run_id"] == "same"
    assert new["replaced"]["run_id"] == "base"
    assert st.get_artifact(new["replaced"]["artifact"]) == old
    assert audit(st, baseline=BASELINE).passed


# --------------------------------------------------------------------------- malformed documents

def _one_line(capsys, *args: str) -> str:
    """A bad stored document: exit 2 and exactly one line on stderr (report/gate: no Prefect)."""
    capsys.readouterr()
    code = main(list(args))
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(lines) == 1, lines
    line = lines[0]
    assert line.startswith("ek-agents: ") and "Traceback" not in line
    return line


def test_manifest_that_is_a_list_is_a_typed_error(st, capsys):
    st.write_bytes(run_key("same", "manifest"), b"[]")
    with pytest.raises(DocumentError, match="manifest.json is malformed: expected a JSON object"):
        run_documents.run_report(st, "same")
    assert "DocumentError" in _one_line(capsys, "report", "same", "--store", st.url)
    assert "DocumentError" in _one_line(capsys, "gate", "same", "--baseline", BASELINE, "--store", st.url)


def test_report_with_a_string_cost_is_a_typed_error(st, capsys):
    _forge(st, "same", "report", lambda r: {**r, "cost": {**r["cost"], "total_dollars": "x"}})
    line = _one_line(capsys, "report", "same", "--store", st.url)
    assert "cost.total_dollars" in line
    assert "cost.total_dollars" in _one_line(capsys, "gate", "same", "--baseline", BASELINE,
                                             "--store", st.url)
    _forge(st, "same", "report", lambda r: {**r, "cost": "x"})
    with pytest.raises(DocumentError, match="field 'cost'"):
        run_documents.run_report(st, "same")
    assert "field 'cost'" in _one_line(capsys, "report", "same", "--json", "--store", st.url)


def test_baseline_that_is_a_number_is_a_typed_error(st, capsys):
    st.write_bytes("baselines/shop-small.json", b"1.5")
    with pytest.raises(BaselineError, match="expected a JSON object"):
        baselines.load_baseline(st, BASELINE)
    line = _one_line(capsys, "gate", "same", "--baseline", BASELINE, "--store", st.url)
    assert "BaselineError" in line and "baselines/shop-small.json" in line


def test_baseline_whose_success_rate_contradicts_its_counts_is_refused(st, capsys):
    doc = st.load_baseline(BASELINE)
    doc["report"]["success_rate"] = 0.1  # the gate would compare against a made-up figure
    st.save_baseline(BASELINE, doc)
    with pytest.raises(BaselineError, match="success_rate"):
        baselines.load_baseline(st, BASELINE)
    line = _one_line(capsys, "gate", "same", "--baseline", BASELINE, "--store", st.url)
    assert "success_rate" in line and "n_success / n_trials" in line


def test_episodes_without_episodes_is_a_typed_error(st, capsys):
    _forge(st, "same", "episodes", lambda d: {"schema_version": 1})
    manifest = run_documents.read_manifest(st, "same")
    with pytest.raises(DocumentError, match="field 'episodes'"):
        run_documents.read_run_doc(st, manifest, "episodes")
    result = audit(st, "same")
    assert not result.passed and any("field 'episodes'" in p for p in result.problems)
    code, line = _cli(capsys, "audit", "same", "--store", st.url)
    assert code == 1 and "episodes.json" in line
