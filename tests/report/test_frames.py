"""The data frames and the export of stored runs, against the runs' own report documents and
read back by DuckDB (a reader of their own)."""
from __future__ import annotations

import json
import math

import pytest

pa = pytest.importorskip("pyarrow")
pd = pytest.importorskip("pandas")
duckdb = pytest.importorskip("duckdb")

import ek_agents
from ek_agents.base import Cost, Episode, ModelCall, RunProvenance, TaskSpec
from ek_agents.cli import main
from ek_agents.errors import AuditFailed, DigestMismatch
from ek_agents.prices import load_prices
from ek_agents.report.export import export_runs, verify_export
from ek_agents.report.frames import TABLES, schema
from ek_agents.report.runsummary import load_runs
from ek_agents.report.trialbrowser import trial_browser
from ek_agents.records import documents
from ek_agents.execution.harness import run_suite
from ek_agents.store import Store, run_key, segment_index_prefix

from ..harness.layout import to_per_trial_files

from .reportkit import REPO


def test_trials_frame_aggregated_equals_the_report_per_slice_and_per_model(stored_runs):
    root, ids = stored_runs
    ids = ids[:3]  # the small, large and degraded agents: two models
    trials = ek_agents.trials_frame(ids, store=root)
    calls = ek_agents.calls_frame(ids, store=root)
    runs = load_runs(root, ids)
    assert len(trials) == sum(r.n_trials for r in runs) and trials["success"].dtype == pd.ArrowDtype(pa.bool_())
    for r in runs:
        mine = trials[trials["run_id"] == r.run_id]
        assert mine["success"].mean() == pytest.approx(r.success_rate, abs=1e-12)
        assert math.fsum(mine["dollars"]) == pytest.approx(r.dollars, abs=1e-12)
        by_slice = mine.groupby("slice", observed=True)
        for s in r.slices:
            assert by_slice["success"].mean()[s.slice] == pytest.approx(s.success_rate, abs=1e-12)
            assert math.fsum(by_slice.get_group(s.slice)["dollars"]) == pytest.approx(s.dollars, abs=1e-12)
    # dollars per model: the calls (here one usage tally per trial) against each run's report
    # (its per-model table when it has one, else its dollars under its model)
    want: dict = {}
    for r in runs:
        for m, v in ({m: row["dollars"] for m, row in r.per_model.items()} or {r.model: r.dollars}).items():
            want[m] = want.get(m, 0.0) + v
    got = {m: math.fsum(g["dollars"]) for m, g in calls.groupby("model", observed=True)}
    assert set(got) == set(want) == {"gpt-4o-mini-2024-07-18", "gpt-4o-2024-08-06"}
    for m in want:
        assert got[m] == pytest.approx(want[m], abs=1e-12)
    steps = ek_agents.steps_frame(ids[:1], store=root)
    assert int(trials[trials["run_id"] == ids[0]]["n_steps"].sum()) == len(steps)


def test_the_frames_have_their_documented_columns_and_types_with_or_without_pandas(stored_runs):
    root, ids = stored_runs
    for name, fn in (("runs", ek_agents.runs_frame), ("trials", ek_agents.trials_frame),
                     ("calls", ek_agents.calls_frame), ("steps", ek_agents.steps_frame)):
        tab = fn(ids[:1], store=root, as_arrow=True)
        assert isinstance(tab, pa.Table) and tab.schema.equals(schema(name))
        assert [c for c, _, _ in TABLES[name]] == tab.column_names
        df = fn(ids[:1], store=root)
        assert list(df.columns) == tab.column_names
        assert [str(t) for t in df.dtypes] == [f"{f.type}[pyarrow]" for f in tab.schema]


def test_duckdb_reads_the_parquet_export_and_its_per_task_table_is_the_reports(stored_runs, tmp_path):
    root, ids = stored_runs
    pick = ids[:3]
    assert main(["export", *pick, "--out", str(tmp_path / "ex"), "--store", root]) == 0
    con = duckdb.connect()
    got = {(r, t): (n, c, d) for r, t, n, c, d in con.execute(
        f"SELECT run_id, task_id, count(*), sum(success::INT), sum(dollars) "
        f"FROM '{tmp_path / 'ex' / 'trials.parquet'}' GROUP BY run_id, task_id").fetchall()}
    st = Store(root)
    page_tasks = {d: None for d in pick}
    for rid in pick:  # the report document's per-task table (n, c) and its priced task totals
        report = documents.read_run_doc(st, documents.read_manifest(st, rid), "report")
        totals = {}
        for s in report["cost"]["per_slice"].values():
            totals.update(s["task_totals"])
        assert {t for r, t in got if r == rid} == set(report["per_task"])
        for task, row in report["per_task"].items():
            n, c, d = got[(rid, task)]
            assert (n, c) == (row["n"], row["c"])
            assert d == pytest.approx(totals[task]["dollars"], abs=1e-12)
        page_tasks[rid] = report["per_task"]
    # the HTML report's per-task table is built from the same counts
    data = json.loads(trial_browser(root, pick).html.split('id="ek-trials">', 1)[1]
                      .split("</script>", 1)[0])
    for run in data["runs"]:
        for task, (_, n, c, d) in run["tasks"].items():
            assert got[(run["id"], task)][:2] == (n, c)
            assert d == pytest.approx(got[(run["id"], task)][2], abs=1e-12)
    runs = con.execute(f"SELECT run_id, n_trials FROM '{tmp_path / 'ex' / 'runs.parquet'}'").fetchall()
    assert sorted(runs) == sorted((r.run_id, r.n_trials) for r in load_runs(root, pick))


def test_an_export_verifies_against_its_run_and_a_changed_file_or_run_is_named(stored_runs, tmp_path, capsys):
    root, ids = stored_runs
    for fmt in ("csv", "jsonl"):
        rec = export_runs(ids[:1], tmp_path / fmt, fmt=fmt, store=root)
        assert rec.files[f"trials.{fmt}"].rows == load_runs(root, ids[:1])[0].n_trials
        assert verify_export(tmp_path / fmt)  # the store export.json names
    lines = (tmp_path / "jsonl" / "steps.jsonl").read_text().splitlines()
    assert len(lines) == rec.files["steps.jsonl"].rows and json.loads(lines[0])["step"] == 0
    exported = json.loads((tmp_path / "csv" / "export.json").read_text())
    manifest = documents.read_manifest(Store(root), ids[0])
    assert exported["runs"][0]["manifest_sha256"] == Store(root).digest(run_key(ids[0], "manifest"))
    assert all(manifest.artifacts[k] == v for k, v in exported["runs"][0]["artifacts"].items())
    # one byte of one file changed: named, exit 1
    p = tmp_path / "csv" / "calls.csv"
    p.write_text(p.read_text().replace("gpt-4o", "gpt-4x", 1))
    with pytest.raises(AuditFailed, match="calls.csv: sha256"):
        verify_export(tmp_path / "csv")
    assert main(["export", "--verify", "--out", str(tmp_path / "csv")]) == 1
    assert "changed after the export" in capsys.readouterr().err


def _two_model_agent(task, *, seed=0):
    calls = [ModelCall("gpt-4o-2024-08-06", input_tokens=900, output_tokens=40),
             ModelCall("gpt-4o-mini-2024-07-18", input_tokens=300, cached_input_tokens=128,
                       output_tokens=20)]
    return Episode(task.task_id, output=task.gold if seed % 3 else "no",
                   cost=Cost.of_calls(calls[: 1 + seed % 2]))


def test_segments_and_per_trial_files_give_the_same_frames_and_per_call_dollars(tmp_path):
    tasks = [TaskSpec(f"t{i}", input="q", gold=f"g{i}", slice="ab"[i % 2]) for i in range(6)]
    prices = load_prices(REPO / "examples" / "prices.json")
    def run(rid):
        run_suite(_two_model_agent, tasks, k=3, seed=1, persist=True, run_id=rid, rootdir=str(tmp_path),
                  prices=prices, progress=False, run=RunProvenance(seed=1))
    run("files"), run("segs")
    to_per_trial_files(Store(str(tmp_path)), "files")  # "files" as earlier versions stored it,
    run("files")                                       # resumed (nothing runs) and recorded
    a, b = (ek_agents.trials_frame([r], store=str(tmp_path)) for r in ("files", "segs"))
    runs = ek_agents.runs_frame(["files", "segs"], store=str(tmp_path))
    assert list(runs["layout"]) == ["graded", "segments"]
    key = ["task_id", "trial"]
    a, b = (x.drop(columns=["run_id", "latency_s"]).sort_values(key)  # latency: wall-clock
            .reset_index(drop=True) for x in (a, b))
    pd.testing.assert_frame_equal(a, b)
    calls = ek_agents.calls_frame(["segs"], store=str(tmp_path))
    assert calls["per_call"].all() and len(calls) == int(a["n_model_calls"].sum())
    report = load_runs(str(tmp_path), ["segs"])[0]
    for m, g in calls.groupby("model", observed=True):
        assert math.fsum(g["dollars"]) == pytest.approx(report.per_model[m]["dollars"], abs=1e-12)
    # a segment index changed after the run: refused, naming it
    st = Store(str(tmp_path))
    key = st.list(segment_index_prefix("segs"))[0]
    st.write_bytes(key, st.read_bytes(key) + b" ")  # the same index, other bytes
    with pytest.raises(DigestMismatch, match="segment index"):
        ek_agents.trials_frame(["segs"], store=str(tmp_path))


def test_a_judged_run_with_labels_has_the_judges_verdict_and_the_label_per_trial(tmp_path):
    tasks = [TaskSpec(f"t{i}", input="q", gold=f"g{i}") for i in range(6)]
    # people disagree with the judge on trial 0 of t0; 12 labels (a correction needs 10)
    labels = "".join(json.dumps({"task_id": f"t{i}", "trial": j, "gold": bool(j % 2) != (i == 0 and j == 0)})
                     + "\n" for i in range(6) for j in range(2)).encode()
    run_suite(lambda t, seed=0: t.gold if seed % 2 else "no", tasks, k=3, seed=0, persist=True,
              run_id="judged", rootdir=str(tmp_path), check=lambda ep, gold: ep.output == gold,
              labels=labels, progress=False)
    t = ek_agents.trials_frame("judged", store=str(tmp_path)).set_index(["task_id", "trial"])
    assert (t["judge_verdict"] == t["success"]).all() and t["success"].sum() == 6
    assert t.loc[("t0", 0), "label"] == True and t.loc[("t1", 1), "label"] == True  # noqa: E712
    assert t.loc[("t2", 0), "label"] == False and t["label"].isna().sum() == 6  # noqa: E712


def test_export_refuses_what_it_cannot_do_in_one_line(stored_runs, tmp_path, capsys):
    root, ids = stored_runs
    assert main(["export", "no-such-run", "--out", str(tmp_path / "x"), "--store", root]) == 2
    assert "no-such-run" in capsys.readouterr().err
    assert main(["export", "--out", str(tmp_path / "x"), "--store", root]) == 2
    assert "give one or more RUN_IDs" in capsys.readouterr().err
    assert main(["export", "--verify", "--out", str(tmp_path / "nothing")]) == 2
    assert "is not an export" in capsys.readouterr().err
    assert main(["export", ids[0], "--out", "s3://bucket/x", "--store", root]) == 2
    assert "give a local folder" in capsys.readouterr().err
