"""Nothing a segment writer is given disappears without a word: a (task, trial) buffered twice
is refused (its first line would be overwritten while its bytes still counted toward the
segment's size), and a line that is not the trial its index names is counted by the streamed
run that wrote it (its summary), and refused when that run is merged -- not only found by the
audit later."""
from __future__ import annotations

import pytest

from ek_agents.base import Episode, TaskSpec
from ek_agents.errors import IntegrityError
from ek_agents.records import segments as sg
from ek_agents.stages.streaming import merged_report, segment_summarizer
from ek_agents.store import Store

TASKS = [TaskSpec("a", input="x", gold="X"), TaskSpec("b", input="y", gold="Y")]


def _line(task, trial, out="X"):
    return Episode(task, output=out, meta={"trial": trial}).to_json().encode()


def test_a_pair_buffered_twice_is_refused_naming_it_and_the_bytes_stay_right(tmp_path):
    w = sg.SegmentWriter(Store(str(tmp_path)), "r", max_trials=10, max_bytes=10_000)
    first, second = _line("a", 0), _line("a", 0, out="other")
    w.put(("a", 0), first)
    with pytest.raises(IntegrityError, match=r"task 'a' trial 0 .* twice"):
        w.put(("a", 0), second)
    assert w.buffer == {("a", 0): first} and w.buffered == len(first) + 1
    w.put(("b", 0), _line("b", 0))
    assert w.buffered == len(first) + len(_line("b", 0)) + 2
    stored = w.flush()
    assert [t.pair for t in stored] == [("a", 0), ("b", 0)]


def test_a_misfiled_line_is_counted_by_the_run_that_wrote_it(tmp_path):
    st = Store(str(tmp_path))
    tasks = {"tasks": [t.to_dict() for t in TASKS]}
    w = sg.SegmentWriter(st, "r", summarize=segment_summarizer(tasks, k=1, check="output"))
    w.put(("a", 0), _line("a", 0))
    w.put(("b", 0), _line("a", 0))  # b's slot holds a's trial
    w.flush()
    summary = w.index.segments[0].summary
    assert summary["misfiled"] == 1
    with pytest.raises(IntegrityError, match=r"1 segment line\(s\) .* not the trial"):
        merged_report(st, "r", tasks, k=1, check="output")
    with pytest.raises(IntegrityError, match="not the trial"):  # read, not merged: the same
        merged_report(st, "r", tasks, k=1, check="output", summaries=False)


def test_what_span_reads_kept_once_reaches_a_streamed_report_as_the_in_memory_one(tmp_path):
    from ek_agents.reporting import build_report

    st = Store(str(tmp_path))
    tasks = {"tasks": [t.to_dict() for t in TASKS]}
    eps = [Episode("a", output="X", meta={"trial": 0, "otel": {"duplicate_tool_calls": 2, "duplicates": 1}}),
           Episode("b", output="Y", meta={"trial": 0, "otel": {"duplicate_tool_calls": 1, "duplicates": 1}})]
    w = sg.SegmentWriter(st, "r", max_trials=1, summarize=segment_summarizer(tasks, k=1, check="output"))
    for ep in eps:
        w.add((ep.task_id, 0), ep.to_json().encode())
    _, streamed, counts = merged_report(st, "r", tasks, k=1, check="output")
    direct = build_report(eps, TASKS, k=1, check="output")
    assert counts["merged"] == 2  # from the segments' summaries
    assert streamed.detail["otel_read"] == direct.detail["otel_read"] == {
        "duplicates": 1, "duplicate_tool_calls": 3}
    said = "OpenTelemetry read: 1 repeated span(s) kept once; 3 repeated tool call id(s) kept once"
    assert said in streamed.detail["warnings"] and said in direct.detail["warnings"]
