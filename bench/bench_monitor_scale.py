"""The monitor at volume: one window of many traces against parsing the same files with orjson.

``python -m bench.bench_monitor_scale [--traces 100000] [--stage window|read]`` records a few
dozen real traces (the pydantic-ai agent of ``ek_agents_examples.otel`` under its own
instrumentation, against the local server), replicates their OTLP/JSON lines with fresh trace
and span ids up to ``--traces`` traces (10 files), then measures, in one run and each in a
fresh process (``bench.children``):

- the baseline: ``orjson.loads`` of every line of the files;
- ``--stage window`` (the default): one window over the files with every verdict already
  cached (the verdict cache of the same traces copied from another series), the series
  evaluated and the report made -- ingest, grouping, cached verdicts and report; with its
  peak RSS;
- ``--stage read``: the reader's part alone -- the episodes of the files streamed
  (``iter_new_episodes``: ingest and grouping) and billed per model (``cost_by_model``), each
  episode dropped once billed (nothing stored); with its peak RSS, and the same again
  serialising each episode (``Episode.to_json``, what a window stores).

Printed: the walls, the ratios to orjson (target <= 3) and the peak RSS (target <= 1 GB). A
window of this size reads its files with a worker process beside it (``monitor.blocks``): the
CPU printed is the window's and its worker's together, and the peak RSS that of both processes
at once (sampled every 100 ms); the wall is what the target is about.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

from bench.children import child_main, run_child_of

__all__ = ["main"]

_run = run_child_of("bench.bench_monitor_scale")


class _PeakRss:
    """The peak of the resident memory of this process and its children (the reader's worker
    process) together, sampled every 100 ms by a thread (the children's own peak is not known
    to getrusage: it reports a forked child at the size of its parent)."""

    def __init__(self) -> None:
        import psutil

        self.me, self.peak, self._stop = psutil.Process(), 0, threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        import psutil

        while not self._stop.wait(0.1):
            total = self.me.memory_info().rss
            for child in self.me.children(recursive=True):
                try:
                    total += child.memory_info().rss
                except psutil.Error:
                    pass
            self.peak = max(self.peak, total)

    def stop(self) -> float:
        """The peak in MB (at least this process' own peak)."""
        self._stop.set()
        self._thread.join()
        own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        return max(self.peak, own) / 2**20


_PEAK: list = []


def _rss_mb() -> float:
    """The peak RSS of this process and its worker together (:class:`_PeakRss`)."""
    return _PEAK.pop().stop() if _PEAK else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def _done(t0: float, c0: float, **got: object) -> dict:
    """The child's wall and CPU seconds since ``t0`` / ``c0`` -- its own and its finished
    children's (the reader's worker process) -- and its peak RSS: the CPU time is printed
    beside the wall, as the wall of a shared machine moves with its load."""
    return {"wall": time.perf_counter() - t0, "cpu": time.process_time() + _children_cpu() - c0,
            "rss_mb": _rss_mb(), **got}


def _start(sample: bool = True) -> tuple[float, float]:
    """The wall and CPU clocks at the start of a measured child; ``sample``: its peak RSS is
    sampled with its children's (not in the orjson baseline: the sampling thread takes the
    interpreter's lock now and then, which would slow the baseline, not the window)."""
    if sample:
        _PEAK.append(_PeakRss())
    return time.perf_counter(), time.process_time() + _children_cpu()


def _orjson_child(folder: str) -> dict:
    import orjson

    t0, c0 = _start(sample=False)
    n = 0
    for f in sorted(Path(folder).iterdir()):
        for line in f.read_bytes().splitlines():
            if line.strip():
                orjson.loads(line)
                n += 1
    return _done(t0, c0, n=n)


def _read_child(folder: str, serialise: bool) -> dict:
    """The streamed episodes of ``folder`` billed per model (and serialised), none kept."""
    from ek_agents.cost import cost_by_model
    from ek_agents.monitor.ingest import Ledger, iter_new_episodes

    t0, c0 = _start()
    stream = iter_new_episodes(folder, Ledger(), slice_attr="app.route", where=folder)
    size = [0, 0]

    def each():
        for ep in stream:
            size[0] += 1
            if serialise:
                size[1] += len(ep.to_json()) + 1
            yield ep

    table, _ = cost_by_model(each(), None)
    assert stream.counts.traces == size[0], (stream.counts, size)
    return _done(t0, c0, n=size[0], calls=sum(r["calls"] for r in table.values()),
                 bytes=size[1])


def _window_child(folder: str, store: str) -> dict:
    from ek_agents.monitor import WindowOptions, monitor_window

    class Judge:
        identity = "bench-judge"

        def __call__(self, output: object) -> float:
            raise AssertionError("every verdict is cached")

    t0, c0 = _start()
    _, _, rep = monitor_window(folder, "hot", store=store, judges=[Judge()],
                               window_id="w1", options=WindowOptions(slice_attr="app.route"))
    assert rep["judge_calls"] == 0, rep["judge_calls"]
    return _done(t0, c0, n=rep["episodes"])


CHILDREN = {"orjson": _orjson_child, "read": _read_child, "window": _window_child}


def _record(n_requests: int) -> list:
    from ek_agents_examples.otel import traffic

    spans = traffic.record(traffic.day_requests(1, n_requests, 0.8, rng=random.Random(0)))
    return [json.loads(x) for x in traffic.otlp_lines(spans, batch=1)]


def _replicate(docs: list, n_traces: int, folder: Path, files: int = 10) -> int:
    """Copies of the recorded spans, each trace under fresh ids, ``n_traces`` traces in all."""
    by_trace: dict = {}
    for d in docs:
        for rs in d["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                for sp in ss["spans"]:
                    by_trace.setdefault(sp["traceId"], []).append((rs, ss, sp))
    traces = list(by_trace.values())
    rng = random.Random(1)
    per_file = -(-n_traces // files)
    made = 0
    for f in range(files):
        with open(folder / f"traces-{f:02d}.jsonl", "w", encoding="utf-8") as out:
            for _ in range(min(per_file, n_traces - made)):
                spans = traces[made % len(traces)]
                tid = "%032x" % rng.getrandbits(128)
                ids = {sp["spanId"]: "%016x" % rng.getrandbits(64) for _, _, sp in spans}
                res = spans[0][0].get("resource", {})
                scopes: dict = {}
                for _, ss, sp in spans:
                    new = dict(sp, traceId=tid, spanId=ids[sp["spanId"]])
                    if sp.get("parentSpanId"):
                        new["parentSpanId"] = ids.get(sp["parentSpanId"], sp["parentSpanId"])
                    scopes.setdefault(json.dumps(ss.get("scope", {})), []).append(new)
                doc = {"resourceSpans": [{"resource": res, "scopeSpans": [
                    {"scope": json.loads(k), "spans": v} for k, v in scopes.items()]}]}
                out.write(json.dumps(doc) + "\n")
                made += 1
    return made


def _s(got: dict) -> str:
    return f"{got['wall']:.2f} s ({got['cpu']:.2f} s CPU)"


def _warm(folder: Path, tmp: Path) -> None:
    """Fill the verdict cache once (series "warm", window "warm": a window is the run of its id),
    then copy it to the measured series."""
    from ek_agents.monitor import WindowOptions, run_window
    from ek_agents.store import Store

    class Judge:
        identity = "bench-judge"

        def __call__(self, output: object) -> float:
            return 0.0 if "unsure" in str(output) else 1.0

    st = Store(str(tmp / "store"))
    run_window(str(folder), "warm", store=st, judges=[Judge()], window_id="warm",
               options=WindowOptions(slice_attr="app.route"))
    for key in st.list("monitor/warm/verdicts"):
        st.write_bytes(key.replace("monitor/warm/", "monitor/hot/"), st.read_bytes(key))


def main(argv: list | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--traces", type=int, default=100_000)
    ap.add_argument("--recorded", type=int, default=40)
    ap.add_argument("--stage", choices=("window", "read"), default="window")
    ap.add_argument("--keep", action="store_true", help="keep the trace files (their folder "
                    "is printed) for another run's --folder")
    ap.add_argument("--folder", help="trace files an earlier --keep run made (not recorded "
                    "again; --traces is then what they hold)")
    a = ap.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="ek-monitor-scale-"))
    try:
        return _measure(a, tmp)
    finally:
        if a.keep:
            print(f"(kept {tmp})")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


def _measure(a: argparse.Namespace, tmp: Path) -> int:
    if a.folder:
        folder = Path(a.folder)
        n = sum(1 for f in folder.iterdir() for _ in open(f, "rb"))
    else:
        folder = tmp / "otel"
        folder.mkdir()
        n = _replicate(_record(a.recorded), a.traces, folder)
    size = sum(f.stat().st_size for f in folder.iterdir())
    head = f"{n} traces in {len(os.listdir(folder))} files ({size / 1e6:.0f} MB)"
    if a.stage == "read":
        base = _run("orjson", [str(folder)])
        got = _run("read", [str(folder), False])
        ser = _run("read", [str(folder), True])
        r1, r2 = got["wall"] / base["wall"], ser["wall"] / base["wall"]
        print(f"{head}: orjson parse {_s(base)}; streamed episodes billed per model (ingest, "
              f"grouping, cost) {_s(got)} = x{r1:.2f} (CPU x{got['cpu'] / base['cpu']:.2f}), "
              f"peak RSS {got['rss_mb']:.0f} MB; the same serialised ({ser['bytes'] / 1e6:.0f} "
              f"MB of episodes) {_s(ser)} = x{r2:.2f} (CPU x{ser['cpu'] / base['cpu']:.2f}), "
              f"peak RSS {ser['rss_mb']:.0f} MB (targets: x3 for the whole window, 1024 MB)")
        return 0 if r1 <= 3 and got["rss_mb"] <= 1024 else 1
    _warm(folder, tmp)
    base = _run("orjson", [str(folder)])
    mon = _run("window", [str(folder), str(tmp / "store")])
    ratio = mon["wall"] / base["wall"]
    print(f"{head}: orjson parse {_s(base)}; monitor window (ingest, grouping, cached "
          f"verdicts, report) {_s(mon)} = x{ratio:.2f} (target <= 3; CPU "
          f"x{mon['cpu'] / base['cpu']:.2f}); peak RSS {mon['rss_mb']:.0f} MB (target <= 1024)")
    return 0 if ratio <= 3 and mon["rss_mb"] <= 1024 else 1


if __name__ == "__main__":
    child_main(CHILDREN, lambda: sys.exit(main()))
