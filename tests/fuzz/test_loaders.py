"""Every input loader answers garbage with a parsed result or an EkAgentsError -- nothing else.

Hypothesis (seeded, derandomized) drives the loaders, seeds and mutators of
``bench/bench_loaders.py`` (suite YAML/JSONL, prices, tau-bench v1 / tau2 / tau2 dir format,
messages JSONL, Inspect .json / .eval zstd and DEFLATE, store reads, a real run's manifest,
report, gate.json and baseline, and the report / gate / audit commands in-process), plus arbitrary JSON
documents and arbitrary bytes. A case that runs past 5 s is stopped by SIGALRM and fails the
test as a hang (no wall-clock time is asserted otherwise); a parsed result that the pipeline
must never see (empty task id, non-finite number, $0 rate without a warning, a file read from
outside a tau2 results folder) fails it as nonsense.
"""
from __future__ import annotations

import json
import os
import random
import sys
import warnings

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench import bench_loaders as bl
from ek_agents.bridge import read_tau_bench_results
from ek_agents.errors import BridgeError, EkAgentsError, InvalidInput
from ek_agents.prices import load_prices
from ek_agents.store import write_url

NAMES = sorted(bl.LOADERS)
# `make test` runs a seeded third of the campaign; `EK_SOAK=1` the whole one (1500 / 600 / 400
# examples), and `make bench` (bench_loaders) 10,000 mutated inputs
SOAK = os.environ.get("EK_SOAK") == "1"
_FUZZ = dict(derandomize=True, deadline=None, database=None, print_blob=True,
             suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])



@pytest.fixture(scope="module", autouse=True)
def no_prefect_api():
    """The CLI loaders run the CLI in-process without Prefect, which they refuse to do with an
    API configured: a Prefect test server that an earlier file started in this process (the
    pipeline tests' session ``prefect_api``; under xdist any file may run before this one) is
    not this module's API."""
    if "prefect.settings" not in sys.modules:
        yield
        return
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with pytest.MonkeyPatch.context() as mp, temporary_settings(restore_defaults={PREFECT_API_URL}):
        mp.delenv("PREFECT_API_URL", raising=False)
        yield


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20)


def _check(name: str, data: bytes, seed: int) -> None:
    outcome, detail = bl.run_case(name, data, random.Random(seed), timeout=5.0)
    assert outcome in ("parsed", "typed"), f"{name}: {outcome}: {detail}\ninput: {data[:300]!r}"


@settings(max_examples=1500 if SOAK else 500, **_FUZZ)
@given(name=st.sampled_from(NAMES), seed=st.integers(0, 2**32 - 1))
def test_mutated_inputs_parse_or_raise_typed(name, seed):
    rnd = random.Random(seed)
    _check(name, bl.make_case(name, rnd), seed)


@settings(max_examples=600 if SOAK else 200, **_FUZZ)
@given(name=st.sampled_from(NAMES), doc=json_values, seed=st.integers(0, 2**16))
def test_arbitrary_json_documents(name, doc, seed):
    if name.startswith("inspect_eval"):  # an archive whose header member is the document
        members = {k: json.dumps(v).encode() for k, v in bl.seeds()[name].items()}
        members["header.json"] = json.dumps(doc).encode()
        data = bl.eval_zip(members, "zstd" if name.endswith("zstd") else "deflate")
    elif name in ("suite_jsonl", "messages_jsonl"):
        data = (json.dumps(doc) + "\n").encode()
    else:
        data = json.dumps(doc).encode()
    _check(name, data, seed)


@settings(max_examples=400 if SOAK else 150, **_FUZZ)
@given(name=st.sampled_from(NAMES), data=st.binary(max_size=300), seed=st.integers(0, 2**16))
def test_arbitrary_bytes(name, data, seed):
    _check(name, data, seed)


# ------------------------------------------------------------- the reproduced cases, pinned

@pytest.mark.parametrize("name", ["store_json", "prices", "tau_v1", "inspect_json"])
@pytest.mark.parametrize("payload, needle", [
    ("[" * 50_000 + "]" * 50_000, "nesting deeper than 128 levels at column 129"),
    ('{"a": ' + "9" * 5000 + "}", "integer of 5000 digits at column 7"),
    ('{"a": 1e999}', "overflows a float"),
    ('{"a": "\\ud800"}', "lone UTF-16 surrogate"),
])
def test_bounded_json_errors_name_the_file_position_and_limit(name, payload, needle):
    if name == "store_json" and "surrogate" in needle:  # the store reads back what it writes
        assert bl.LOADERS[name](payload.encode(), random.Random(0)) == {"a": "\ud800"}
        return
    with pytest.raises(EkAgentsError, match=needle):
        bl.LOADERS[name](payload.encode(), random.Random(0))
    bl._clear_memory_fs()


def test_yaml_alias_bomb_is_refused_at_its_first_anchor():
    with pytest.raises(EkAgentsError, match=r"fz.yaml: line 1 column 4: YAML anchors and aliases are refused"):
        bl.load_suite_yaml(bl.YAML_PAYLOADS[0].encode(), random.Random(0))


@pytest.mark.parametrize("method", ["zstd", "deflate"])
def test_eval_member_inflating_past_the_cap_is_refused(method, tmp_path):
    members = {k: json.dumps(v).encode() for k, v in bl.seeds()["inspect_eval_zstd"].items()}
    members[next(k for k in members if k.startswith("samples/"))] = b" " * (100 * 1024 * 1024)
    data = bl.eval_zip(members, method)
    assert len(data) < 1024 * 1024
    with pytest.raises(BridgeError, match="over the limit of 67108864 bytes"):
        bl.load_inspect(data, random.Random(0))
    bl._clear_memory_fs()


@pytest.mark.parametrize("bad_id", ["../outside", "../../outside", "/outside"])
def test_tau2_index_ids_never_leave_the_results_folder(bad_id):
    rnd = random.Random(0)
    doc = bl._tau2_dir_doc(random.Random(1))
    doc.setdefault("simulation_index", [])
    doc["simulation_index"][0]["id"] = bad_id
    with pytest.raises(BridgeError, match="simulation_index does not match the files"):
        bl.load_tau2_dir(json.dumps(doc).encode(), rnd)
    bl._clear_memory_fs()


@pytest.mark.parametrize("where", ["run", "run/results.json"])
def test_tau2_dir_without_index_and_the_run_folder_itself_are_read(where):
    seed = bl.seeds()["tau2"]
    doc = {k: v for k, v in seed.items() if k != "simulations"}  # no index, no simulations key
    write_url("memory://ekfz-t2/run/results.json", json.dumps(doc).encode())
    for sim in seed["simulations"]:
        write_url(f"memory://ekfz-t2/run/simulations/{sim['id']}.json", json.dumps(sim).encode())
    try:
        got = read_tau_bench_results(f"memory://ekfz-t2/{where}")
    finally:
        bl._clear_memory_fs()
    want = read_tau_bench_results("tests/bridge/fixtures/tau2_results.json")
    assert [(e.task_id, e.meta["simulation_id"], e.success) for e in got] == \
        [(e.task_id, e.meta["simulation_id"], e.success) for e in want]


@pytest.mark.parametrize("patch, field", [
    ({"info": {"agent_info": 5}}, "info.agent_info must be an object, got int 5"),
    ({"simulation_index": [{"task_id": "t"}], "simulations": []}, r"simulation_index\[0\] needs a string 'id'"),
])
def test_tau2_wrong_nested_types_name_the_field(patch, field):
    doc = {**bl.seeds()["tau2"], **patch}
    with pytest.raises(BridgeError, match=field):
        bl._load_tau(json.dumps(doc).encode(), random.Random(0))
    bl._clear_memory_fs()


@pytest.mark.parametrize("patch, field", [
    ({"eval": {"model_generate_config": 1.5}}, "header.eval.model_generate_config must be an object"),
    ({"plan": {"steps": {"a": 1}}}, "header.plan.steps must be a list"),
])
def test_inspect_header_wrong_nested_types_name_the_field(patch, field):
    doc = bl.seeds()["inspect_json"]
    doc = {**doc, **{k: ({**doc.get(k, {}), **v} if isinstance(v, dict) else v) for k, v in patch.items()}}
    with pytest.raises(BridgeError, match=field):
        bl.load_inspect(json.dumps(doc).encode(), random.Random(0))
    bl._clear_memory_fs()


def test_inspect_header_that_is_a_list_is_refused():
    members = {k: json.dumps(v).encode() for k, v in bl.seeds()["inspect_eval_zstd"].items()}
    members["header.json"] = b"[1, 2]"
    with pytest.raises(BridgeError, match="the log header must be an object, got list"):
        bl.load_inspect(bl.eval_zip(members, "zstd"), random.Random(0))
    bl._clear_memory_fs()


def test_message_type_that_is_a_list_and_an_empty_task_id_are_refused():
    line = {"task_id": "t", "messages": [{"type": ["function_call"], "role": "assistant"}]}
    with pytest.raises(BridgeError, match=r"messages\[0\].type must be a string"):
        bl.load_messages((json.dumps(line) + "\n").encode(), random.Random(0))
    with pytest.raises(BridgeError, match="'task_id' must be a non-empty string"):
        bl.load_messages(b'{"task_id": "", "messages": []}\n', random.Random(0))
    bl._clear_memory_fs()


@pytest.mark.parametrize("rate", ["1.5e-7 USD", -1e-6, True, [1], "nan"])
def test_a_present_rate_that_is_not_a_rate_is_an_error_naming_model_and_key(rate):
    with pytest.raises(InvalidInput, match=r"entry 'm': input_cost_per_token = .* is not a rate"):
        load_prices({"m": {"input_cost_per_token": rate, "output_cost_per_token": 1e-6}})


def test_a_chat_model_missing_a_rate_warns_and_dollars_are_never_infinite():
    with pytest.warns(UserWarning, match=r"'m' \(input_cost_per_token\)"):
        load_prices({"m": {"output_cost_per_token": 1e-6, "mode": "chat"}})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        table = load_prices({"m": {"input_cost_per_token": 1e308, "output_cost_per_token": 1e308}})
    from ek_agents.base import Cost
    from ek_agents.cost import dollars

    with pytest.raises(InvalidInput, match="not a finite amount"):
        dollars(Cost(input_tokens=10, output_tokens=10), "m", prices=table)


@pytest.mark.parametrize("name", ["CON", "nul", "com1", "LPT9.json", "Aux.txt", "a.", "x.."])
def test_windows_reserved_and_dot_ending_names_are_refused(name):
    from ek_agents.store import Store

    with pytest.raises(InvalidInput, match=f"invalid run id {name!r}"):
        Store.validate_name(name, what="run id")
    assert Store.validate_name("console", what="run id") == "console"


# ------------------------------------------------- stored documents: manifests, reports, baselines

def _doc(name: str, **patch) -> bytes:
    doc = bl.stored_docs()[name]
    return json.dumps({**doc, **patch}).encode()


def test_a_report_that_is_an_empty_object_is_not_a_run_of_zero_trials():
    from ek_agents.errors import DocumentError

    with pytest.raises(DocumentError, match=r"report.json is malformed: field 'n_trials' is missing"):
        bl.load_run_report(b"{}", random.Random(0))  # digest patched: the shape check answers
    bl._clear_memory_fs()


@pytest.mark.parametrize("field, value", [("success_rate", 0.99), ("n_success", 1), ("n_trials", 1000)])
def test_a_baseline_whose_success_rate_contradicts_its_counts_is_refused(field, value):
    from ek_agents.errors import BaselineError

    doc = bl.stored_docs()["baseline"]
    data = json.dumps({**doc, "report": {**doc["report"], field: value}}).encode()
    with pytest.raises(BaselineError, match="shop-small.json .field 'report'. is inconsistent"):
        bl.load_baseline_doc(data, random.Random(0))
    bl._clear_memory_fs()


def test_a_report_whose_bytes_differ_from_the_manifest_is_a_digest_mismatch():
    from ek_agents.records import documents as run_documents
    from ek_agents.errors import DigestMismatch

    store = bl._store_with(random.Random(0), "manifest", bl.stored_run()[bl.DOC_KEYS["manifest"]])
    store.write_bytes(bl.DOC_KEYS["report"], _doc("report", n_success=0))
    with pytest.raises(DigestMismatch, match="report.json has sha256"):
        run_documents.read_run_doc(store, run_documents.read_manifest(store, bl.RUN), "report")
    bl._clear_memory_fs()


@pytest.mark.parametrize("loader, data, code", [
    ("cli_report", b"manifest\0[]", 2),
    ("cli_audit", b"manifest\0[]", 2),
    ("cli_gate", b"baseline\0" + b"1.5", 2),
    ("cli_gate", b"gate\0{}", 0),  # gate recomputes the verdict; gate.json is not what it reads
    ("cli_report", b"report\0" + json.dumps({"k": 1, "n_trials": 4, "n_success": 1,
                                              "success_rate": 0.75}).encode(), 2),
])
def test_the_cli_answers_a_damaged_document_with_an_exit_code_and_one_line(loader, data, code, capsys):
    outcome = "parsed" if code == 0 else "typed"
    assert bl.run_case(loader, data, random.Random(0)) == (outcome, "" if code == 0 else "CliRefused")


def test_audit_of_a_manifest_with_a_malformed_provenance_fails_in_one_line():
    doc = bl.stored_docs()["manifest"]
    inputs = {**doc["inputs"], "run": {**doc["inputs"]["run"], "seed": 1.5}}
    data = b"manifest\0" + json.dumps({**doc, "inputs": inputs}).encode()
    assert bl.run_case("cli_audit", data, random.Random(0)) == ("typed", "CliRefused")


@pytest.mark.parametrize("where, patch, field", [
    ("manifest", {"gate": {"passed": True, "reasons": 1.5}}, "field 'gate'.* field 'reasons'"),
    ("manifest", {"gate": {"passed": True, "sequential": 3}}, "field 'gate.sequential' must be an object"),
    ("report", {"detail": {"warnings": 7}}, "field 'detail.warnings' must be a list of strings"),
])
def test_wrong_nested_types_the_report_renders_are_refused_naming_the_field(where, patch, field):
    from ek_agents.records import documents as run_documents
    from ek_agents.errors import DocumentError

    store = bl._store_with(random.Random(0), where, _doc(where, **patch))
    with pytest.raises(DocumentError, match=field):
        run_documents.run_report(store, bl.RUN)
    bl._clear_memory_fs()


def test_a_gate_verdict_that_is_not_a_boolean_and_a_per_task_figure_that_is_not_a_number_are_refused():
    from ek_agents.errors import BaselineError, DocumentError

    with pytest.raises(DocumentError, match="field 'passed'"):
        bl.load_gate_json(_doc("gate", passed=-0.0), random.Random(0))
    doc = bl.stored_docs()["baseline"]
    task = next(iter(doc["report"]["per_task"]))
    per_task = {**doc["report"]["per_task"], task: {"pass_hat_k": {"n": 2}}}
    data = json.dumps({**doc, "report": {**doc["report"], "per_task": per_task}}).encode()
    with pytest.raises(BaselineError, match=f"field 'per_task.{task}.pass_hat_k' must be a number"):
        bl.load_baseline_doc(data, random.Random(0))
    bl._clear_memory_fs()
