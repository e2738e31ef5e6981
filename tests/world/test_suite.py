"""Suite files: YAML and JSONL layouts, defaults, shared tools, errors naming file/line/field,
the JSON Schema agreeing with the loader, and dump/load round trips."""
from __future__ import annotations

import doctest
import json
import textwrap

import jsonschema
import pytest
import yaml

import ek_agents
from ek_agents import suite as suite_mod
from ek_agents.base import TaskSpec, ToolSpec
from ek_agents.core import FieldSpec
from ek_agents.errors import ArtifactNotFound, EkAgentsError, SuiteError
from ek_agents.parsing import parse_yaml
from ek_agents.suite import Suite, dump_suite, load_suite, parse_suite, suite_schema

GOOD_YAML = textwrap.dedent("""\
    name: demo
    version: "2.1"
    checker: final_state
    description: a tiny suite
    tools:
      get_order:
        description: Look up an order.
        params:
          order_id: {type: string, required: true, importance: 2}
      refund:
        destructive: true
        params:
          order_id: {type: string, required: true, importance: 10}
          amount: {type: number, required: true, importance: 20}
          note: string
    tasks:
      - task_id: t1
        input: where is O1?
        gold: {final_state: {db: {}}}
        slice: lookup
        tools: [get_order]
      - task_id: t2
        input: refund O1
        gold: {final_state: {db: {orders: {O1: refunded}}}}
        value: 4
        slice: refund
        checker: output
        meta: {difficulty: 3}
      - task_id: t3
        input: {text: hi, when: 2024-01-02}
        gold: HI
        tools:
          - get_order
          - name: shout
            params: {text: {type: string, domain: [a, b]}}
    """)


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def err(tmp_path, name, text) -> str:
    with pytest.raises(SuiteError) as info:
        load_suite(write(tmp_path, name, text))
    return str(info.value)


# --------------------------------------------------------------------------- good files

def test_yaml_suite_loads_with_defaults_and_shared_tools(tmp_path):
    p = write(tmp_path, "demo.yaml", GOOD_YAML)
    s = load_suite(p)
    assert isinstance(s, Suite) and (s.name, s.version, s.checker) == ("demo", "2.1", "final_state")
    assert s.task_ids == ("t1", "t2", "t3") and len(s) == 3 and s.slices == ("lookup", "refund")
    import hashlib
    assert s.digest == hashlib.sha256(p.read_bytes()).hexdigest() and s.path == str(p)
    t1, t2, t3 = s.tasks
    assert [t.name for t in t1.tools] == ["get_order"]
    assert [t.name for t in t2.tools] == ["get_order", "refund"]   # omitted -> every shared tool
    assert [t.name for t in t3.tools] == ["get_order", "shout"]    # a name plus an inline tool
    assert t1.checker == "final_state" and t2.checker == "output"  # suite default, override
    assert (t1.value, t2.value) == (1.0, 4.0) and t2.meta == {"difficulty": 3}
    refund = t2.tools[1]
    assert refund.destructive and refund.weight == 10.0
    assert refund.params["amount"] == FieldSpec("amount", "number", 20.0, None, True, None)
    assert refund.params["note"] == FieldSpec("note")          # the shorthand is a type name
    assert t2.grammar().field_cost("refund", "amount") == 20.0
    assert t3.tools[1].params["text"].domain == ("a", "b")
    assert t3.input == {"text": "hi", "when": "2024-01-02"}  # dates stay strings (JSON data)
    assert s.task("t2") is t2 and s.by_id()["t3"] is t3
    with pytest.raises(KeyError, match="did you mean 't1'"):
        s.task("t11")


def test_jsonl_suite_with_header_line(tmp_path):
    header = {"suite": {"name": "j", "version": "7", "checker": "output",
                        "tools": {"echo": {"params": {"x": "string"}}}}}
    rows = [{"task_id": "a", "input": "x", "gold": "x"},
            {"task_id": "b", "input": "y", "gold": "y", "tools": [], "slice": "s"}]
    text = "\n".join(json.dumps(r) for r in [header, *rows]) + "\n\n"
    s = load_suite(write(tmp_path, "j.jsonl", text))
    assert (s.name, s.version, s.checker) == ("j", "7", "output")
    assert [t.name for t in s.tasks[0].tools] == ["echo"] and s.tasks[1].tools == ()
    assert all(t.checker == "output" for t in s)


def test_jsonl_without_header_defaults_name_and_version(tmp_path):
    p = write(tmp_path, "plain.jsonl", '{"task_id": "a", "input": 1, "gold": 2}\n')
    s = load_suite(p)
    assert s.name == "plain" and s.version == "sha256:" + s.digest[:12] and s.checker is None


def test_format_sniffed_and_fsspec_urls(tmp_path):
    import fsspec
    rows = '{"task_id": "a", "gold": 1}\n{"task_id": "b", "gold": 2}\n'
    assert load_suite(write(tmp_path, "tasks.txt", rows)).task_ids == ("a", "b")
    with fsspec.open("memory://suites/s.yaml", "wb") as fh:
        fh.write(GOOD_YAML.encode())
    assert load_suite("memory://suites/s.yaml").name == "demo"
    assert load_suite(f"file://{write(tmp_path, 'f.yaml', GOOD_YAML)}").version == "2.1"


def test_json_files_load_even_where_yaml_would_refuse_them(tmp_path):
    doc = {"name": "j", "tasks": [{"task_id": "a", "gold": 1}]}
    p = write(tmp_path, "tabs.json", json.dumps(doc, indent="\t"))
    assert load_suite(p).task_ids == ("a",)
    bad = write(tmp_path, "bad.json", '{\n\t"tasks": [\n\t\t{"task_id": "a" "b"}\n\t]\n}')
    with pytest.raises(SuiteError, match=r"bad.json: line 3 column \d+: not valid JSON"):
        load_suite(bad)


def test_lazy_public_names():
    assert ek_agents.load_suite is load_suite and ek_agents.Suite is Suite and ek_agents.dump_suite is dump_suite


def test_module_doctests():
    res = doctest.testmod(suite_mod, optionflags=doctest.ELLIPSIS)
    assert res.attempted >= 5 and res.failed == 0


# --------------------------------------------------------------------------- bad files

def test_jsonl_value_error_names_file_line_task_and_field(tmp_path):
    text = "\n".join(json.dumps(r) for r in [
        {"suite": {"name": "x"}}, {"task_id": "t1", "gold": 1}, {"task_id": "t2", "gold": 1},
        {"task_id": "t3", "gold": 1, "value": "high"}])
    msg = err(tmp_path, "bad.jsonl", text)
    assert msg.endswith("bad.jsonl: task 't3' (line 4): 'value' must be a non-negative number, got 'high'")


def test_yaml_errors_point_at_the_field_line(tmp_path):
    bad = GOOD_YAML.replace("value: 4", "value: -1")
    msg = err(tmp_path, "s.yaml", bad)
    line = next(i for i, ln in enumerate(bad.splitlines(), 1) if "value: -1" in ln)
    assert f"task 't2' (line {line}): 'value'" in msg and "got -1" in msg


def test_unknown_tool_reference_suggests_the_close_name(tmp_path):
    msg = err(tmp_path, "s.yaml", GOOD_YAML.replace("tools: [get_order]", "tools: [get_ordr]"))
    assert "task 't1' (line 21): tools[0]: " in msg and "unknown tool 'get_ordr'" in msg
    assert "did you mean 'get_order'?" in msg


def test_duplicate_task_id(tmp_path):
    text = '{"task_id": "a", "gold": 1}\n{"task_id": "b", "gold": 1}\n{"task_id": "a", "gold": 2}\n'
    msg = err(tmp_path, "d.jsonl", text)
    assert "task 'a' (line 3): duplicate task_id 'a' (first used on line 1)" in msg


def test_misspelt_keys_get_did_you_mean(tmp_path):
    msg = err(tmp_path, "k.jsonl", '{"task_id": "a", "gold": 1, "vlaue": 2}\n')
    assert "unknown task key 'vlaue'; did you mean 'value'?" in msg and "(line 1)" in msg
    msg = err(tmp_path, "k.yaml", GOOD_YAML.replace("checker: final_state", "chekcer: final_state"))
    assert "unknown key 'chekcer'; did you mean 'checker'?" in msg
    msg = err(tmp_path, "k2.yaml", GOOD_YAML.replace("note: string", "note: strng"))
    assert "tool 'refund' argument 'note': unknown type 'strng'; did you mean 'string'?" in msg


@pytest.mark.parametrize("text, needle", [
    ('{"task_id": "a", "gold": 1}\n{"task_id": "b", gold: 1}\n', "line 2 column 18: not valid JSON"),
    ('{"task_id": "a"}\n{"suite": {"name": "late"}}\n', "line 2: a {\"suite\": ...} header line must be the first"),
    ('{"gold": 1}\n{"task_id": "b"}\n', "task #1 (line 1): missing 'task_id'"),
    ('{"task_id": 7}\n{"task_id": "b"}\n', "'task_id' must be a non-empty string, got 7 (quote it)"),
    ('[1, 2]\n{"task_id": "b"}\n', "line 1: expected a JSON object (a task), got [1, 2]"),
    ('{"task_id": "a", "tools": "get"}\n{"task_id": "b"}\n', "'tools' must be a list"),
    ('{"task_id": "a", "value": NaN}\n{"task_id": "b"}\n', "NaN at column 27 is not a number"),
    ('{"task_id": "a", "slice": 3}\n{"task_id": "b"}\n', "'slice' must be a string label, got 3"),
])
def test_jsonl_mistakes(tmp_path, text, needle):
    assert needle in err(tmp_path, "m.jsonl", text)


@pytest.mark.parametrize("text, needle", [
    ("name: x\ntasks:\n  - task_id: a\n    input: [unclosed\n", "line 5 column 1: not valid YAML"),
    ("- task_id: a\n", "line 1: the top level is a list; put the tasks under 'tasks:'"),
    ("name: x\n", "no 'tasks' list"),
    ("", "the file is empty"),
    ("name: x\ntasks: []\n", "the suite has no tasks"),
    ("version: 1.10\ntasks:\n  - task_id: a\n", "suite header (line 1): 'version' must be a string, got 1.1 (quote it"),
    ("tools:\n  t: {destructive: yes-please}\ntasks:\n  - task_id: a\n",
     "tool definitions (line 2): tool 't': 'destructive' must be true or false"),
    ("tools:\n  t: {params: {a: {type: number, importance: -2}}}\ntasks:\n  - task_id: a\n",
     "tool 't' argument 'a': 'importance' must be a non-negative number, got -2"),
    ("tasks:\n  - task_id: a\n    tools: [{name: t, params: {x: {required: maybe}}}]\n",
     "task 'a' (line 3): tool 't' argument 'x': 'required' must be true or false"),
    ("tasks:\n  - task_id: a\n  - task_id: b\n    tools: [x, x]\n", "unknown tool 'x'"),
    ("tools: {x: {}}\ntasks:\n  - task_id: b\n    tools: [x, x]\n", "tools[1]: tool 'x' is listed twice"),
    ("tasks:\n  - task_id: a\n    gold: {1: .nan}\n", "'.nan' is not a finite number"),
])
def test_yaml_mistakes(tmp_path, text, needle):
    assert needle in err(tmp_path, "y.yaml", text)


def test_missing_file_and_errors_are_catchable_as_builtins(tmp_path):
    with pytest.raises(ArtifactNotFound, match="no such suite file") as info:
        load_suite(tmp_path / "nope.yaml")
    assert isinstance(info.value, FileNotFoundError)
    with pytest.raises(ValueError):
        parse_suite(b"tasks: 3", path="x.yaml")
    with pytest.raises(SuiteError, match="not UTF-8"):
        parse_suite(b"\xff\xfe\x00bad", path="x.yaml")
    with pytest.raises(SuiteError, match="is a directory"):
        load_suite(tmp_path)


# --------------------------------------------------------------------------- schema agreement

def ydoc(text: str):
    """Parse YAML the way load_suite does (dates stay strings)."""
    return parse_yaml(text, where="<test>")[0]


def _validator():
    schema = suite_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def test_schema_accepts_the_good_files_and_the_bundled_suite():
    from examples.shop.world import SUITE_PATH

    v = _validator()
    assert list(v.iter_errors(ydoc(GOOD_YAML))) == []
    assert list(v.iter_errors(yaml.safe_load(SUITE_PATH.read_text()))) == []


@pytest.mark.parametrize("mutate", [
    lambda d: d["tasks"][1].__setitem__("value", "high"),
    lambda d: d["tasks"][0].__setitem__("vlaue", 1),
    lambda d: d["tasks"][0].pop("task_id"),
    lambda d: d["tools"]["refund"]["params"]["amount"].__setitem__("type", "money"),
    lambda d: d["tools"]["refund"].__setitem__("destructive", "yes"),
    lambda d: d.__setitem__("version", 1.5),
    lambda d: d.__setitem__("tasks", []),
    lambda d: d.__setitem__("extra", 1),
])
def test_schema_and_loader_reject_the_same_mistakes(tmp_path, mutate):
    doc = ydoc(GOOD_YAML)
    mutate(doc)
    assert list(_validator().iter_errors(doc)), "the schema should reject this"
    with pytest.raises(SuiteError):
        load_suite(write(tmp_path, "m.json", json.dumps(doc)))


def test_schema_describes_jsonl_lines():
    schema = suite_schema()
    header = jsonschema.Draft202012Validator({"$defs": schema["$defs"], "$ref": "#/$defs/header_line"})
    task = jsonschema.Draft202012Validator({"$defs": schema["$defs"], "$ref": "#/$defs/task"})
    assert header.is_valid({"suite": {"name": "x", "version": "1"}})
    assert not header.is_valid({"suite": {"nmae": "x"}})
    assert task.is_valid({"task_id": "a", "value": 2, "tools": ["x", {"name": "y"}]})
    assert not task.is_valid({"task_id": "a", "value": -1})


# --------------------------------------------------------------------------- writing

def _tasks():
    get = ToolSpec("get", {"id": FieldSpec("id", required=True, importance=2.0)}, description="Get.")
    pay = ToolSpec("pay", {"amount": FieldSpec("amount", "number", 20.0, required=True),
                           "tags": FieldSpec("tags", "array", items="string")}, destructive=True)
    other_pay = ToolSpec("pay", {"amount": FieldSpec("amount", "integer")}, importance=3.0)
    return [
        TaskSpec("a", "hi", {"final_state": {"x": [1, 2]}}, 2.0, (get, pay), "s1", "final_state"),
        TaskSpec("b", {"q": "yo"}, "YO", 1.0, (get,), None, "final_state", {"k": 1}),
        TaskSpec("c", None, None, 0.5, (other_pay,), "s2", "output"),  # conflicting 'pay': inlined
    ]


@pytest.mark.parametrize("suffix", [".yaml", ".jsonl"])
def test_dump_then_load_round_trips(tmp_path, suffix):
    tasks = _tasks()
    path = tmp_path / f"out{suffix}"
    digest = dump_suite(tasks, path, name="rt", version="3")
    s = load_suite(path)
    assert s.digest == digest and (s.name, s.version) == ("rt", "3")
    assert s.tasks == tuple(tasks)
    again = tmp_path / f"again{suffix}"
    assert dump_suite(s, again) == digest  # a loaded suite writes back byte for byte


def test_dump_shares_common_tools_and_checker(tmp_path):
    path = tmp_path / "o.yaml"
    dump_suite(_tasks(), path)
    doc = yaml.safe_load(path.read_text())
    assert list(doc["tools"]) == ["get"] and doc["checker"] == "final_state"
    assert doc["tasks"][0]["tools"][0] == "get" and doc["tasks"][2]["tools"][0]["name"] == "pay"
    assert doc["tasks"][2]["checker"] == "output"


def test_dump_refuses_what_it_cannot_write(tmp_path):
    with pytest.raises(EkAgentsError, match="no tasks"):
        dump_suite([], tmp_path / "e.yaml")
    with pytest.raises(SuiteError, match="task 'x' gold is not JSON data"):
        dump_suite([TaskSpec("x", gold={1, 2})], tmp_path / "e.yaml")


def test_shipped_schema_is_generated_from_the_models():
    """The pydantic models in ek_agents.suite are the format; the shipped schema is theirs."""
    from ek_agents.suite import build_suite_schema

    assert suite_schema() == build_suite_schema()
