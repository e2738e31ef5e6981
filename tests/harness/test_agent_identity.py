"""An agent is identified by everything that decides its answers (issue 23): closures,
instances, bound methods, partials and code without a source file. The second agent of a run
id gets a typed refusal (or, on its own run id, its own results: success 0.0), never the first
agent's 1.0; an equal agent resumes with every trial reused, in this process and in another
started with another PYTHONHASHSEED."""
from __future__ import annotations

import functools
import importlib
import json
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from ek_agents.identity import _agentstate as agentstate, agentid
from ek_agents.stages import audit
from ek_agents.base import TaskSpec
from ek_agents.errors import RunMismatch, UnidentifiedAgent
from ek_agents.harness import run_suite
from ek_agents.manifest import report_markdown
from ek_agents.record import run_report
from ek_agents.store import Store

ROOT = Path(__file__).resolve().parents[2]
ag = importlib.import_module("tests.harness.identity_agents")  # one module name in every process
TASKS = [TaskSpec(f"t{i}", input=f"q{i}", gold=f"Q{i}") for i in range(4)]

#: each shape: (build the agent from its answer, the state key that tells OK from WRONG)
SHAPES = {
    "closure": (ag.make_agent, "closure.answer"),
    "instance": (ag.Agent, "self.answer"),
    "bound_method": (lambda a: ag.Agent(a).run, "self"),
    "partial": (ag.make_partial, "partial.keywords.answer"),
}


def _run(agent, root, run_id="n", **kw):
    return run_suite(agent, TASKS, k=2, seed=0, run_id=run_id, rootdir=str(root), **kw)


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_the_second_agent_is_refused_or_gets_its_own_results_never_the_first_ones(tmp_path, shape):
    build, key = SHAPES[shape]
    assert _run(build("OK"), tmp_path).success_rate == 1.0
    with pytest.raises(RunMismatch, match=rf"agent_identity\.state\.{key}: sha256:\w+ \(stored\) "
                                          r"-> sha256:\w+.*new run id.*refresh"):
        _run(build("WRONG"), tmp_path)
    assert _run(build("WRONG"), tmp_path, run_id="own").success_rate == 0.0
    refreshed = _run(build("WRONG"), tmp_path, refresh=True)
    assert refreshed.success_rate == 0.0 and refreshed.detail["reused"]["episodes"] == 0


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_an_equal_agent_resumes_with_every_trial_reused(tmp_path, shape):
    build, key = SHAPES[shape]
    _run(build("OK"), tmp_path)
    ag.CALLS.clear()
    again = _run(build("OK"), tmp_path)  # a fresh object, equal to the first
    assert ag.CALLS == [] and again.detail["reused"]["episodes"] == 8 and again.success_rate == 1.0
    recorded = Store(tmp_path).read_manifest("n")["fingerprint"]["agent_identity"]
    assert key in recorded["state"] or any(k.startswith(key) for k in recorded["state"])
    assert recorded["undigestable"] == {} and recorded["instance"] is None


def test_the_issue_example_a_closure_served_another_closures_results(tmp_path):
    def make_agent(answer):
        return lambda task: answer

    tasks = [TaskSpec(f"t{i}", input="q", gold="OK") for i in range(10)]
    assert run_suite(make_agent("OK"), tasks, k=2, seed=0, run_id="n",
                     rootdir=str(tmp_path)).success_rate == 1.0
    with pytest.raises(RunMismatch, match="closure.answer"):
        run_suite(make_agent("WRONG"), tasks, k=2, seed=0, run_id="n", rootdir=str(tmp_path))


def test_an_undigestable_attribute_runs_once_then_a_resume_is_refused_naming_it(tmp_path):
    agent = ag.LockedAgent("OK")
    with pytest.warns(UserWarning, match=r"self\.guard.*_thread\.lock.*ek_config.*agent_id"):
        assert _run(agent, tmp_path).success_rate == 1.0
    ag.CALLS.clear()
    assert _run(agent, tmp_path).detail["reused"]["episodes"] == 8  # the very same live objects
    assert ag.CALLS == []
    for other in (ag.LockedAgent("OK"), ag.LockedAgent("WRONG")):  # equal or not: not known
        with pytest.raises(UnidentifiedAgent, match=r"run 'n' cannot be resumed.*self\.guard.*"
                                                    r"_thread\.lock.*ek_config.*agent_id=.*fresh "
                                                    r"run id.*refresh"):
            _run(other, tmp_path)
    assert issubclass(UnidentifiedAgent, RunMismatch) and issubclass(UnidentifiedAgent, ValueError)
    st = Store(tmp_path)
    manifest, report = run_report(st, "n")
    assert "self.guard" in manifest["fingerprint"]["agent_identity"]["undigestable"]
    assert "agent identity: NOT identified -- self.guard" in report_markdown(manifest, report)
    done = audit.audit(st, "n")
    assert done.passed and "resume of this run id is refused" in done.notes[0]
    assert _run(ag.LockedAgent("WRONG"), tmp_path, refresh=True).success_rate == 0.0


def test_a_real_openai_client_is_undigestable_and_agent_id_or_ek_config_make_it_resumable(tmp_path):
    import openai

    class ClientAgent:
        def __init__(self, model):
            self.model = model
            self.client = openai.OpenAI(api_key="sk-test", base_url="http://127.0.0.1:9/v1")

        def __call__(self, task):
            return task.input.upper()

    found = agentid.agent_identity(ClientAgent("gpt-4o"))
    assert list(found.undigestable) == ["self.client"] and "self.model" in found.state
    assert "sk-test" not in json.dumps(found.to_dict())  # a digest, never the value
    _run(ClientAgent("gpt-4o"), tmp_path, run_id="named", agent_id="bot/gpt-4o")
    again = _run(ClientAgent("gpt-4o"), tmp_path, run_id="named", agent_id="bot/gpt-4o")
    assert again.detail["reused"]["episodes"] == 8
    with pytest.raises(RunMismatch, match=r"agent_identity\.agent_id: 'bot/gpt-4o' \(stored\) -> "
                                          r"'bot/gpt-4o-mini'"):
        _run(ClientAgent("gpt-4o-mini"), tmp_path, run_id="named", agent_id="bot/gpt-4o-mini")
    declared = ag.DeclaredLockedAgent("OK")  # ek_config replaces walking its attributes
    found = agentid.agent_identity(declared)
    assert found.identified and found.declared == ("agent",) and list(found.state) == ["ek_config"]
    _run(declared, tmp_path, run_id="declared")
    assert _run(ag.DeclaredLockedAgent("OK"), tmp_path, run_id="declared").detail["reused"][
        "episodes"] == 8
    with pytest.raises(RunMismatch, match="agent_config"):
        _run(ag.DeclaredLockedAgent("WRONG"), tmp_path, run_id="declared")


def test_state_walks_through_values_of_every_kind_and_stops_on_cycles():
    np = pytest.importorskip("numpy")
    import dataclasses
    import enum

    class Color(enum.Enum):
        RED = 1
        BLUE = 2

    @dataclasses.dataclass
    class Node:
        name: str
        children: list

    def ident(value):
        return agentid.agent_identity(lambda task: value).state["closure.value"]

    same = [({"b": 1, "a": [1, 2.0]}, {"a": [1, 2.0], "b": 1}),  # key order is not identity
            ({"x", "y", "z"}, {"z", "y", "x"}), (np.arange(6.0), np.arange(6.0)),
            (Color.RED, Color.RED), (Node("a", []), Node("a", []))]
    for a, b in same:
        assert ident(a) == ident(b), a
    differ = [(1, 1.0), ((1, 2), [1, 2]), (np.arange(6.0), np.arange(6.0).reshape(2, 3)),
              (np.zeros(3, "f4"), np.zeros(3, "f8")), (Color.RED, Color.BLUE),
              (Node("a", []), Node("b", [])), ("x" * 10_000, "x" * 9_999 + "y")]
    for a, b in differ:
        assert ident(a) != ident(b), (a, b)
    cyclic = Node("root", [])
    cyclic.children.append(cyclic)  # terminates, and is identified
    assert agentid.agent_identity(lambda task: cyclic).identified
    deep: list = []
    for _ in range(agentid.MAX_DEPTH + 5):
        deep = [deep]
    beyond = agentid.agent_identity(lambda task: deep)
    assert "closure.deep" in beyond.undigestable and "deeper than" in beyond.undigestable["closure.deep"]


def test_code_without_a_file_and_module_functions_are_identified_by_code_not_address():
    first = agentid.agent_identity(functools.partial(ag.answer_fn, answer="OK"))
    again = agentid.agent_identity(functools.partial(ag.answer_fn, answer="OK"))
    assert first == again
    scope: dict = {}
    exec(compile("agent = lambda t: 'OK'", "<stdin>", "exec"), scope)
    ok = agentid.agent_identity(scope["agent"])
    exec(compile("agent = lambda t: 'WRONG'", "<stdin>", "exec"), scope)
    wrong = agentid.agent_identity(scope["agent"])
    assert ok.code != wrong.code
    scope.update(ANSWER="OK")  # code with no file: the globals it reads are state
    exec(compile("agent = lambda t: ANSWER", "<stdin>", "exec"), scope)
    by_global = agentid.agent_identity(scope["agent"])
    assert "globals.ANSWER" in by_global.state
    scope.update(ANSWER="WRONG")
    assert agentid.agent_identity(scope["agent"]).state != by_global.state


# --------------------------------------------------------------------------- other processes

def _python(script: str, *, seed: str, stdin: bool = False) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(ROOT)}
    args = [sys.executable, "-"] if stdin else [sys.executable, "-c", script]
    return subprocess.run(args, input=script if stdin else None, capture_output=True, text=True,
                          cwd=str(ROOT), env=env, timeout=120)


RESUME = """
import importlib, json, sys
from ek_agents.base import TaskSpec
from ek_agents.harness import run_suite
ag = importlib.import_module("tests.harness.identity_agents")
tasks = [TaskSpec(f"t{i}", input=f"q{i}", gold=f"Q{i}") for i in range(4)]
shapes = {"closure": ag.make_agent, "instance": ag.Agent, "bound_method": lambda a: ag.Agent(a).run,
          "partial": ag.make_partial}
out = {}
for shape, build in shapes.items():
    r = run_suite(build(sys.argv[2] if len(sys.argv) > 2 else "OK"), tasks, k=2, seed=0,
                  run_id=shape, rootdir=sys.argv[1])
    out[shape] = [r.detail["reused"]["episodes"], r.success_rate, len(ag.CALLS)]
print(json.dumps(out))
"""


def test_equal_agents_resume_in_another_process_with_another_hash_seed(tmp_path):
    for shape, (build, _) in SHAPES.items():
        _run(build("OK"), tmp_path, run_id=shape)
    done = _python(RESUME.replace("sys.argv[1]", repr(str(tmp_path))).replace(
        "sys.argv[2] if len(sys.argv) > 2 else ", ""), seed="12345")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {
        shape: [8, 1.0, 0] for shape in SHAPES}  # every trial reused, no agent call
    wrong = _python(RESUME.replace("sys.argv[1]", repr(str(tmp_path))).replace(
        "sys.argv[2] if len(sys.argv) > 2 else \"OK\"", "\"WRONG\""), seed="999")
    assert wrong.returncode == 1 and "RunMismatch" in wrong.stderr
    assert "agent_identity.state.closure.answer" in wrong.stderr


STDIN = """
from ek_agents.base import TaskSpec
from ek_agents.harness import run_suite
tasks = [TaskSpec(f"t{{i}}", input="q", gold="OK") for i in range(4)]
try:
    r = run_suite(lambda t: {answer!r}, tasks, k=2, seed=0, run_id="stdin", rootdir={root!r})
    print("result", r.success_rate, r.detail["reused"]["episodes"])
except Exception as exc:
    print("refused", type(exc).__name__, exc)
"""


def test_stdin_lambdas_are_told_apart_and_the_same_one_resumes(tmp_path):
    def run(answer, seed):
        done = _python(STDIN.format(answer=answer, root=str(tmp_path)), seed=seed, stdin=True)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip().splitlines()[-1]

    assert run("OK", "1") == "result 1.0 0"
    refused = run("WRONG", "2")
    assert refused.startswith("refused RunMismatch") and "agent_identity.code" in refused
    assert run("OK", "3") == "result 1.0 8"  # the same lambda, re-run: every trial reused


def test_an_undigestable_agent_is_refused_in_another_process(tmp_path):
    _run(ag.LockedAgent("OK"), tmp_path, run_id="locked")
    script = textwrap.dedent(f"""
        import importlib
        from ek_agents.base import TaskSpec
        from ek_agents.errors import UnidentifiedAgent
        from ek_agents.harness import run_suite
        ag = importlib.import_module("tests.harness.identity_agents")
        tasks = [TaskSpec(f"t{{i}}", input=f"q{{i}}", gold=f"Q{{i}}") for i in range(4)]
        try:
            run_suite(ag.LockedAgent("OK"), tasks, k=2, seed=0, run_id="locked", rootdir={str(tmp_path)!r})
        except UnidentifiedAgent as exc:
            print("refused", exc)
    """)
    done = _python(script, seed="7")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("refused run 'locked' cannot be resumed") and "self.guard" in done.stdout


def test_agentid_doctests_and_it_sits_low_in_the_layers():
    import ast
    import doctest

    for module, allowed in ((agentid, {"errors", "core", "base", "_agentstate"}),
                            (agentstate, {"errors", "core"})):
        assert doctest.testmod(module).failed == 0
        tree = ast.parse(Path(module.__file__).read_text(encoding="utf-8"))
        own = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level}
        assert own <= allowed, own  # record, harness, the pipeline build on it
        assert "numpy" not in {a.name for n in ast.walk(tree) if isinstance(n, ast.Import)
                               for a in n.names}


def test_the_identity_of_rich_state_is_the_same_in_another_process_with_another_hash_seed():
    here = agentid.agent_identity(ag.rich_agent()).to_dict()
    script = ("import importlib, json; from ek_agents.identity import agentid; "
              "ag = importlib.import_module('tests.harness.identity_agents'); "
              "print(json.dumps(agentid.agent_identity(ag.rich_agent()).to_dict()))")
    for seed in ("1", "31337"):
        done = _python(script, seed=seed)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout.strip().splitlines()[-1]) == here
    assert {"self.weights", "self.mode", "self.limits", "self.example", "self.table",
            "self.tools"} <= set(here["state"]) and here["undigestable"] == {}
