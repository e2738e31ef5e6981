"""The cheap path for the harness's plain episodes (``record.PlainEpisodeJson``) gives the
general path's bytes (``canonical_json(ep.to_dict())``) or declines; the chunks' grading of a
trial from its episode gives the bytes of grading its stored file; a plain run stores the same
files as the general path would."""
from __future__ import annotations

import asyncio
import json

import pytest

from ek_agents.records import documents, trials
from ek_agents.base import Cost, Episode, RunProvenance, Step, TaskSpec, Trajectory
from ek_agents.core import canonical_json
from ek_agents.execution.harness import run_trials, store_trials
from ek_agents.store import Store

from .layout import held_lines

RUNS = [None, RunProvenance(seed=3, suite_version="1"),
        RunProvenance(seed=0, temperature=0.7, model="gpt-\u00e9", simulator="s", scaffold="x")]
OUTPUTS = ["A1", "", "caf\u00e9 \u65e5\u672c \U0001F600", "a\ud800b", "quote \" back \\ nl \n tab \t",
           "\x00\x1f\x7f", 0, -7, 2 ** 70, True, False, None, 0.1, -0.0, 1e300, 5e-324,
           1.0000000000000002, 123456789.123456789]
METAS = [{}, {"trial": 3, "attempts": 1, "latency_s": 0.0512345},
         {"trial": 0, "attempts": 2, "latency_s": 1e-9, "retries": 1},
         {"\u00fc": "v", "b": None, "a": True, "z": 1.5, "m": 2 ** 65}]


def _varied() -> list[Episode]:
    eps = []
    for i, out in enumerate(OUTPUTS):
        for j, meta in enumerate(METAS):
            run = RUNS[(i + j) % len(RUNS)]
            success = (None, True, False)[(i * 7 + j) % 3]
            eps.append(Episode(f"t{i}-\u00e9" if j % 2 else f"t{i}", output=out, run=run,
                               meta=meta, success=success))
    return eps


def test_the_plain_path_gives_the_general_bytes_on_varied_episodes():
    enc = trials.PlainEpisodeJson()
    eps = _varied()
    for ep in eps:
        got = enc(ep)
        assert got is not None, ep
        assert got == canonical_json(ep.to_dict()), ep
    # and the bytes parse back to an equal episode (grading either gives the same)
    for ep in eps:
        assert Episode.from_dict(json.loads(enc(ep))) == ep


def test_an_errored_trial_s_episode_is_encoded_the_same_way():
    enc = trials.PlainEpisodeJson()
    ep = Episode("t1", success=False, run=RUNS[1],
                 meta={"error": "ValueError: boom \u00e9", "error_kind": "exception", "trial": 0,
                       "attempts": 1})
    assert enc(ep) == canonical_json(ep.to_dict())


@pytest.mark.parametrize("ep", [
    Episode("t", output={"a": 1}), Episode("t", output=[1, 2]), Episode("t", output=(1,)),
    Episode("t", output=float("nan")), Episode("t", output=float("inf")),
    Episode("t", output=10 ** 5000), Episode("t", output="x", meta={"n": -10 ** 5000}),
    Episode("t", output="x", final_state={"k": 1}), Episode("t", output="x", cost=Cost(usd=0.1)),
    Episode("t", output="x", trajectory=Trajectory((Step("search", {"q": "a"}),))),
    Episode("t", output="x", meta={"nested": {"a": 1}}), Episode("t", output="x", meta={"l": [1]}),
    Episode("t", output="x", meta={"f": float("inf")}),
])
def test_anything_not_plain_is_declined(ep):
    assert trials.PlainEpisodeJson()(ep) is None


def test_a_subclass_or_a_str_subclass_is_declined():
    class Sub(str):
        pass

    assert trials.PlainEpisodeJson()(Episode("t", output=Sub("x"))) is None
    assert trials.PlainEpisodeJson()(Episode("t", output="x", meta={"k": Sub("v")})) is None


def test_an_encoder_whose_pieces_disagree_with_the_general_path_stops_encoding(monkeypatch):
    enc = trials.PlainEpisodeJson()
    ep = Episode("t", output="x", run=RunProvenance(seed=1))
    monkeypatch.setattr(Episode, "to_dict", lambda self: {"changed": True})
    assert enc(ep) is None
    monkeypatch.undo()
    assert enc(ep) is None  # broken for good: every later episode goes the general way
    assert trials.PlainEpisodeJson()(ep) == canonical_json(ep.to_dict())


def test_grading_from_the_episode_gives_the_bytes_of_grading_the_stored_file():
    eps = [ep.replace(success=None) for ep in _varied()]
    tasks = documents.tasks_doc([TaskSpec(ep.task_id, input="q", gold="A1") for ep in
                              {e.task_id: e for e in eps}.values()])
    from_file, from_episode = trials.trial_grader(tasks, None), trials.trial_grader(tasks, None)
    enc = trials.PlainEpisodeJson()
    for i, ep in enumerate(eps):
        data = enc(ep)
        trial = trials.StoredTrial(task_id=ep.task_id, trial=i, key=f"runs/r/{i}.json",
                                   sha256="0" * 64, data=data.decode("ascii"))
        parsed, direct = from_file(trial), from_episode(trial, ep)
        assert parsed is not None and direct is not None
        assert direct[1] == parsed[1] == canonical_json(direct[0].to_dict()).decode("ascii")
        assert direct[0] == parsed[0]


async def _plain_agent(task):
    await asyncio.sleep(0)
    return {"t0": "caf\u00e9", "t1": 2.5, "t2": None, "t3": "a\ud800"}.get(task.task_id, task.gold)


def _bad_agent(task):
    if task.task_id == "t4":
        raise ValueError("boom \u00e9")
    if task.task_id == "t5":
        return {"deep": [1, {"x": (2, 3)}]}
    if task.task_id == "t6":
        return Episode(task.task_id, output="own", meta={"mine": 1})
    return task.gold


@pytest.mark.parametrize("agent", [_plain_agent, _bad_agent])
def test_stored_files_are_the_general_bytes_and_the_hook_gets_only_plain_episodes(tmp_path, agent):
    tasks = [TaskSpec(f"t{i}", input=f"q{i}", gold=f"A{i}") for i in range(8)]
    st = Store(str(tmp_path / "store"))
    seen = []
    stored = store_trials(agent, tasks, [(t.task_id, j) for t in tasks for j in range(2)], k=2,
                          store=st, run_id="r1", seed=5, run=RunProvenance(model="m"),
                          on_stored=lambda trial, ep: seen.append((trial, ep)))
    eps = {(e.task_id, e.meta["trial"]): e for e in
           run_trials(agent, tasks, k=2, seed=5, run=RunProvenance(model="m"))}
    assert len(stored) == len(seen) == 16
    held = held_lines(st, "r1")
    for trial in stored:
        data = held[(trial.task_id, trial.trial)]
        assert data.decode("ascii") == trial.data and st.digest(trial.key) == trial.sha256
        doc = json.loads(data)
        ep = Episode.from_dict(doc)
        # the same bytes as the general path gives for the same episode
        assert canonical_json(ep.to_dict()) == data
        theirs = eps[(trial.task_id, trial.trial)]  # the same trial, not stored
        assert canonical_json(ep.output) == canonical_json(theirs.output)
        assert {**ep.meta, "latency_s": 0} == {**theirs.meta, "latency_s": 0}
    for trial, ep in seen:
        if ep is not None:  # handed over: exactly what its bytes parse back to
            assert ep == Episode.from_dict(json.loads(trial.data))
            assert isinstance(ep.output, (str, int, float, type(None)))
    handed = {(t.task_id, t.trial) for t, ep in seen if ep is not None}
    if agent is _bad_agent:
        assert not any(p[0] in ("t4", "t5", "t6") for p in handed)
    assert len(handed) == (16 if agent is _plain_agent else 10)


def test_a_plain_answer_s_episode_is_the_validated_episode_of_the_same_fields():
    answers = {"t0": "caf\u00e9", "t1": 2.5, "t2": None, "t3": {"a": [1, (2,)]}, "t4": 7}

    def agent(task, *, seed):
        return answers[task.task_id]

    tasks = [TaskSpec(t, input="q", gold="g") for t in answers]
    run = RunProvenance(model="m", suite_version="1")
    for ep in run_trials(agent, tasks, k=2, seed=3, run=run):
        same = Episode(ep.task_id, output=answers[ep.task_id],
                       run=RunProvenance(seed=3 + ep.meta["trial"], model="m", suite_version="1"),
                       meta=dict(ep.meta))
        assert ep == same and repr(ep) == repr(same)
        assert canonical_json(ep.to_dict()) == canonical_json(same.to_dict())


def test_a_whole_document_of_mixed_episodes_is_the_general_bytes():
    """``trials.episodes_json``: plain episodes through the cheap path, the rest the general
    way, graded or not -- the bytes of ``canonical_json(episodes_doc(...))``."""
    mixed = _varied() + [
        Episode("s1", output={"a": [1, 2]}, meta={"trial": 0}),
        Episode("s2", output="x", trajectory=Trajectory([Step("tool", name="f", args={"q": 1})])),
        Episode("s3", output="y", cost=Cost(input_tokens=3, output_tokens=4)),
    ]
    graded = [e.graded(i % 2 == 0) for i, e in enumerate(mixed)]
    for eps in (mixed, graded, []):
        assert trials.episodes_json(eps) == canonical_json(documents.episodes_doc(eps))


@pytest.mark.parametrize("agent", [_plain_agent, _bad_agent])
def test_run_suite_s_documents_are_the_general_bytes(tmp_path, agent):
    from ek_agents.execution.harness import run_suite

    tasks = [TaskSpec(f"t{i}", input=f"q{i}", gold=f"A{i}") for i in range(8)]
    st = Store(str(tmp_path / "store"))
    # a callable check: the report is computed in memory and the whole-run documents written
    run_suite(agent, tasks, k=2, seed=5, run_id="r1", rootdir=st.url, progress=False,
              check=lambda ep, gold: ep.output == gold)
    for stage in ("episodes", "graded"):
        data = st.read_bytes(f"runs/r1/{stage}.json")
        eps = documents.episodes_of(json.loads(data))
        assert len(eps) == 16
        assert data == canonical_json(documents.episodes_doc(eps))
