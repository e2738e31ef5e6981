"""The streamed reader of a monitor window (`iter_new_episodes`) against the reader that holds
the whole window (`read_new_traces` + `episodes_of_traces`), on copies (fresh ids) of real
pydantic-ai traces recorded under its own instrumentation (tests/fixtures/otlp): the same
episodes, counts and ledger, window after window -- pending traces, an appended file, a rotated
and a shrunk file, a copy of a file, bad lines, a compressed file, blocks far smaller than a
file (lines cut across blocks)."""
from __future__ import annotations

import gzip
import json
import random
from pathlib import Path

import pytest

from ek_agents.errors import InvalidInput
from ek_agents.monitor.ingest import (Ledger, episodes_of_traces, iter_new_episodes,
                                      read_new_traces)
from ek_agents.monitor import blocks, ingest
from ek_agents.store import sources

FIXTURE = Path(__file__).parents[1] / "fixtures" / "otlp" / "monitor-traffic.jsonl.gz"
ROUTE = "app.route"


def _recorded() -> list:
    """The fixture's traces: for each, its spans as (resource, scope, span)."""
    by_trace: dict = {}
    for line in gzip.decompress(FIXTURE.read_bytes()).splitlines():
        for rs in json.loads(line)["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                for sp in ss["spans"]:
                    by_trace.setdefault(sp["traceId"], []).append((rs, ss, sp))
    return list(by_trace.values())


RECORDED = _recorded()


def _copies(n: int, seed: int) -> list:
    """``n`` copies of the recorded traces under fresh trace and span ids."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        spans = RECORDED[i % len(RECORDED)]
        tid = "%032x" % rng.getrandbits(128)
        ids = {sp["spanId"]: "%016x" % rng.getrandbits(64) for _, _, sp in spans}
        made = []
        for rs, ss, sp in spans:
            new = dict(sp, traceId=tid, spanId=ids[sp["spanId"]])
            if sp.get("parentSpanId"):
                new["parentSpanId"] = ids.get(sp["parentSpanId"], sp["parentSpanId"])
            made.append((rs, ss, new))
        out.append(made)
    return out


def _line(spans: list) -> str:
    scopes: dict = {}
    for _, ss, sp in spans:
        scopes.setdefault(json.dumps(ss.get("scope", {})), []).append(sp)
    return json.dumps({"resourceSpans": [{"resource": spans[0][0].get("resource", {}), "scopeSpans": [
        {"scope": json.loads(k), "spans": v} for k, v in scopes.items()]}]})


def _split(trace: list) -> tuple:
    """A trace's spans without its root, and its root."""
    roots = [x for x in trace if not x[2].get("parentSpanId")]
    return [x for x in trace if x not in roots], roots


def _both(src: Path, ledger: Ledger, workers: int = 0, **opts) -> tuple:
    """(episodes as JSON, counts, ledger) of the whole-window reader and of the stream (its
    lines parsed by ``workers`` worker processes)."""
    attrs = (None if opts.get("group_by", "trace") == "trace" else opts["group_by"],
             opts.get("task_attr"), ROUTE)
    batch = read_new_traces(str(src), ledger, attrs=attrs)
    held = episodes_of_traces(batch, slice_attr=ROUTE, where="w", **opts)
    stream = iter_new_episodes(str(src), ledger, slice_attr=ROUTE, where="w", workers=workers,
                               **opts)
    streamed = list(stream)
    return ([e.to_json() for e in held], batch.counts.model_dump(), batch.ledger.model_dump(),
            [e.to_json() for e in streamed], stream.counts.model_dump(), stream.ledger.model_dump())


def _same(src: Path, ledger: Ledger, workers: int = 0, ordered: bool = False, **opts) -> tuple:
    held, c1, l1, streamed, c2, l2 = _both(src, ledger, workers, **opts)
    assert (held if ordered else sorted(held)) == (streamed if ordered else sorted(streamed))
    assert c1 == c2
    assert l1 == l2
    return Ledger.model_validate(l2), c2, streamed


@pytest.fixture
def small_blocks(monkeypatch):
    """Blocks of 16 KiB: every file is many blocks, most lines cut across two."""
    monkeypatch.setattr(sources, "SOURCE_BLOCK", 16 << 10)


class _ReadyParser(blocks.LineParser):
    """The line parser, waiting for its worker to start (a small input would be read before it
    did), the worker making every episode it may, and counting what the worker parsed and
    made."""

    by_worker = made = 0

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        for w in self.workers:  # (the held reader parses here)
            assert w.wait_ready(60)
        self.share = 1.0 if self.build else 0.0

    def _pace(self, answered: bool) -> None:
        pass

    def _result(self, unit, sent):
        got = super()._result(unit, sent)
        if got[0] == "lines":
            _ReadyParser.made += sum(map(len, got[1][2].values()))
        return got

    def __exit__(self, *exc) -> None:
        _ReadyParser.by_worker += self.by_worker
        super().__exit__(*exc)


@pytest.fixture(params=[0, 1], ids=["here", "worker"])
def workers(request, monkeypatch):
    """The stream's lines parsed in this process, or by a worker process."""
    if request.param:
        monkeypatch.setattr(ingest, "LineParser", _ReadyParser)
    yield request.param
    if request.param:
        assert _ReadyParser.by_worker > 0 and _ReadyParser.made > 0


def test_windows_of_pending_appended_rotated_shrunk_and_bad_input(tmp_path, small_blocks, workers):
    traces = _copies(240, seed=1)
    src = tmp_path / "otel"
    src.mkdir()
    log, other = src / "a.jsonl", src / "b.jsonl.gz"
    rest, root = _split(traces[5])
    lines = [_line(t) for t in traces[:5]] + [_line(rest), "{not json", '{"resourceSpans": 3}']
    lines += [_line(t) for t in traces[6:120]]
    log.write_text("".join(x + "\n" for x in lines) + _line(traces[120])[:200])  # a cut last line
    late, late_root = _split(traces[121])
    other.write_bytes(gzip.compress(("".join(_line(t) + "\n" for t in traces[122:160])
                                     + _line(late) + "\n").encode()))
    led, c, eps = _same(src, Ledger(), workers)
    assert (c["traces"], c["pending_traces"], c["bad_lines"], c["files"]) == (157, 2, 2, 2)
    assert len(eps) == 157 and led.files and len(led.consumed) == 157

    # the writer finishes its line, the pending roots arrive, new traces are appended
    with open(log, "w") as f:
        f.write("".join(x + "\n" for x in lines) + _line(traces[120]) + "\n" + _line(root) + "\n"
                + "".join(_line(t) + "\n" for t in traces[160:200]))
    (src / "c.jsonl").write_text(_line(late_root) + "\n" + _line(traces[200]) + "\n")
    led2, c2, eps2 = _same(src, led, workers)
    assert (c2["traces"], c2["pending_traces"], c2["bad_lines"]) == (44, 0, 0)
    assert not set(eps) & set(eps2)

    # a re-run reads nothing new; a rotated file and a copy of a file are the files read
    led3, c3, eps3 = _same(src, led2, workers)
    assert (eps3, c3["traces"], c3["spans"]) == ([], 0, 0)
    log.rename(src / "a.jsonl.1")
    (src / "c-copy.jsonl").write_bytes((src / "c.jsonl").read_bytes())
    _, c4, eps4 = _same(src, led3, workers)
    assert (eps4, c4["new_files"], c4["duplicate_files"], c4["spans"]) == ([], 0, 1, 0)
    # a file that shrank below what was read is not read again
    (src / "c-copy.jsonl").unlink()
    (src / "c.jsonl").write_text(_line(late_root) + "\n")
    _, c5, eps5 = _same(src, led3, workers)
    assert (eps5, c5["shrunk_files"], c5["spans"]) == ([], 1, 0)


def test_spans_after_their_root_are_late_in_the_stream(tmp_path):
    rest, root = _split(_copies(1, seed=4)[0])
    (tmp_path / "a.jsonl").write_text(_line(root) + "\n")
    (tmp_path / "b.jsonl").write_text(_line(rest) + "\n")
    held, c1, _, streamed, c2, l2 = _both(tmp_path, Ledger())
    assert (len(held), c1["late_spans"]) == (1, 0)  # held to the end: one trace, every span
    assert (streamed, c2["no_model_call"], c2["late_spans"]) == ([], 1, len(rest))
    assert len(l2["consumed"]) == 1


def test_a_trace_grouped_by_attribute_is_the_same_episode_in_the_same_order(tmp_path,
                                                                            small_blocks):
    traces = _copies(90, seed=2)
    (tmp_path / "t.jsonl").write_text("".join(_line(a + b) + "\n"
                                              for a, b in zip(traces[::2], traces[1::2])))
    _, c, eps = _same(tmp_path, Ledger(), ordered=True, group_by=ROUTE, task_attr=ROUTE)
    assert len(eps) == len({json.loads(e)["meta"]["slice"] for e in eps}) == 2
    assert c["traces"] == 90


def test_a_stream_is_read_once_and_counts_come_at_its_end(tmp_path):
    (tmp_path / "t.jsonl").write_text("".join(_line(t) + "\n" for t in _copies(3, seed=3)))
    stream = iter_new_episodes(str(tmp_path), Ledger())
    with pytest.raises(InvalidInput, match="read the stream to its end"):
        stream.counts
    assert len(list(stream)) == 3 and stream.counts.traces == 3
    assert len(stream.ledger.consumed) == 3
    with pytest.raises(InvalidInput, match="read once"):
        list(stream)


class _DyingParser(_ReadyParser):
    """The line parser whose worker is killed once it has started (the blocks sent to it are
    never answered)."""

    gone = 0  # readers that went on without their worker

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        if self.worker is not None:
            self.worker.proc.kill()
            self.worker.proc.wait()

    def __exit__(self, *exc) -> None:
        _DyingParser.gone += self.build is not None and self.worker is None
        super().__exit__(*exc)


def test_a_worker_that_dies_mid_read_leaves_the_rest_to_the_reader(tmp_path, small_blocks,
                                                                   monkeypatch):
    (tmp_path / "t.jsonl").write_text("".join(_line(t) + "\n" for t in _copies(60, seed=5)))
    monkeypatch.setattr(ingest, "LineParser", _DyingParser)
    _, c, eps = _same(tmp_path, Ledger(), 1)
    assert c["traces"] == len(eps) == 60 and _DyingParser.gone == 1  # (the stream's reader)
    with pytest.raises(InvalidInput, match="workers must be a whole number"):
        iter_new_episodes(str(tmp_path), Ledger(), workers=-1)


def test_episodes_the_worker_made_are_numbered_in_the_stream(tmp_path, small_blocks, monkeypatch):
    """With a task attribute the traces of a route are trials of one task: the worker makes
    their episodes, the stream numbers their trials in its order, as the reader does."""
    (tmp_path / "t.jsonl").write_text("".join(_line(t) + "\n" for t in _copies(40, seed=6)))

    def stream(workers):
        got = iter_new_episodes(str(tmp_path), Ledger(), task_attr=ROUTE, slice_attr=ROUTE,
                                where="w", workers=workers)
        return [e.to_json() for e in got], got.counts, got.ledger

    here = stream(0)
    monkeypatch.setattr(ingest, "LineParser", _ReadyParser)
    made = _ReadyParser.made
    assert stream(1) == here
    trials = [json.loads(e)["meta"]["trial"] for e in here[0]]
    assert here[1].traces == 40 and max(trials) > 10 and _ReadyParser.made > made


def test_an_episode_the_worker_made_is_not_used_when_its_trace_has_more_lines(tmp_path):
    """A trace on two lines taken at once (a file read again up to where it was read): the
    worker made its episode from the line holding its root; the reader drops it, reads that
    line's spans again and makes the episode of them all."""
    trace = _copies(1, seed=7)[0]
    rest, root = _split(trace)
    first, second = (_line(root + rest[:2]) + "\n").encode(), (_line(rest[2:]) + "\n").encode()
    scan = ingest._Scan(str(tmp_path), Ledger(), (None, None, ROUTE), files=[], build=(None, ROUTE, "w"))
    build = (1.0, None, ROUTE, "w")
    a = blocks.read_block(first, 0, "f", scan.keep, build)
    b = blocks.read_block(second, len(first), "f", scan.keep, build)
    assert a[2] and not b[2]  # made from the first line alone; the second has no root
    lines = [(at, spans, a[2].get(at) and (a[2][at], first, 0, "f")) for at, spans in a[0]]
    lines += [(at, spans, None) for at, spans in b[0]]
    scan._take(lines, "file", 0)
    (tid, spans), = scan.complete([trace[0][2]["traceId"]])
    assert tid not in scan.ready_made and all(s.attrs is not None for s in spans)
    held = read_new_traces(str(tmp_path), Ledger(), attrs=(None, None, ROUTE), files=[])
    held.traces = {tid: spans}
    mine = episodes_of_traces(held, slice_attr=ROUTE, where="w")
    (tmp_path / "t.jsonl").write_bytes(first + second)
    ref = episodes_of_traces(read_new_traces(str(tmp_path), Ledger(), attrs=(None, None, ROUTE)),
                             slice_attr=ROUTE, where="w")
    assert [e.to_json() for e in mine] == [e.to_json() for e in ref] and len(ref) == 1


def test_a_worker_reads_a_plain_file_itself_only_while_it_is_the_file_read(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text("".join(_line(t) + "\n" for t in _copies(3, seed=8)))
    data, st = path.read_bytes(), path.stat()
    ours = blocks.read_block(data, 0, str(path), None)
    assert blocks.read_block(None, 0, str(path), None, None, len(data), (st.st_dev, st.st_ino)) == ours
    rotated = tmp_path / "new.jsonl"  # the name now holds another file (rotated away)
    rotated.write_bytes(data)
    rotated.replace(path)
    for length, ident in ((len(data), (st.st_dev, st.st_ino)), (len(data) + 1, None)):
        ident = ident or (path.stat().st_dev, path.stat().st_ino)
        with pytest.raises(blocks.BlockMoved):
            blocks.read_block(None, 0, str(path), None, None, length, ident)
