"""The monitor at volume: one window of many traces against parsing the same files with orjson.

``python -m bench.bench_monitor_scale [--traces 100000]`` records a few dozen real traces (the
pydantic-ai agent of ``ek_agents_examples.otel`` under its own instrumentation, against the
local server), replicates their OTLP/JSON lines with fresh trace and span ids up to
``--traces`` traces (10 files), then measures, in one run and each in a fresh process:

- the baseline: ``orjson.loads`` of every line of the files;
- the monitor: one window over the files with every verdict already cached (the verdict cache
  of the same traces copied from another series), the series evaluated and the report made --
  ingest, grouping, cached verdicts and report; with its peak RSS.

Printed: both walls, the ratio (target <= 3) and the monitor's peak RSS (target <= 1 GB).
"""
from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

__all__ = ["main"]

_CHILD = r"""
import json, resource, sys, time
mode, folder, store = sys.argv[1:4]
t0 = time.perf_counter()
if mode == "orjson":
    import orjson
    from pathlib import Path
    n = 0
    for f in sorted(Path(folder).iterdir()):
        for line in f.read_bytes().splitlines():
            if line.strip():
                orjson.loads(line)
                n += 1
else:
    from ek_agents.monitor import WindowOptions, monitor_window

    class Judge:
        identity = "bench-judge"
        def __call__(self, output):
            raise AssertionError("every verdict is cached")
    _, _, rep = monitor_window(folder, mode, store=store, judges=[Judge()],
                               window_id="w1", options=WindowOptions(slice_attr="app.route"))
    n = rep["episodes"]
    assert rep["judge_calls"] == 0, rep["judge_calls"]
print(json.dumps({"wall": time.perf_counter() - t0, "n": n,
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


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
                resource = spans[0][0].get("resource", {})
                scopes: dict = {}
                for _, ss, sp in spans:
                    new = dict(sp, traceId=tid, spanId=ids[sp["spanId"]])
                    if sp.get("parentSpanId"):
                        new["parentSpanId"] = ids.get(sp["parentSpanId"], sp["parentSpanId"])
                    scopes.setdefault(json.dumps(ss.get("scope", {})), []).append(new)
                doc = {"resourceSpans": [{"resource": resource, "scopeSpans": [
                    {"scope": json.loads(k), "spans": v} for k, v in scopes.items()]}]}
                out.write(json.dumps(doc) + "\n")
                made += 1
    return made


def _child(mode: str, folder: Path, store: Path) -> dict:
    got = subprocess.run([sys.executable, "-c", _CHILD, mode, str(folder), str(store)],
                         capture_output=True, text=True, check=True)
    return json.loads(got.stdout.strip().splitlines()[-1])


def main(argv: list | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--traces", type=int, default=100_000)
    ap.add_argument("--recorded", type=int, default=40)
    a = ap.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="ek-monitor-scale-"))
    folder = tmp / "otel"
    folder.mkdir()
    n = _replicate(_record(a.recorded), a.traces, folder)
    size = sum(f.stat().st_size for f in folder.iterdir())
    # fill the verdict cache once (series "warm", window "warm": a window is the run of its id),
    # then copy it to the measured series
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
    base = _child("orjson", folder, tmp / "store")
    mon = _child("hot", folder, tmp / "store")
    ratio = mon["wall"] / base["wall"]
    print(f"{n} traces in {len(os.listdir(folder))} files ({size / 1e6:.0f} MB): orjson parse "
          f"{base['wall']:.2f} s; monitor window (ingest, grouping, cached verdicts, report) "
          f"{mon['wall']:.2f} s = x{ratio:.2f} (target <= 3); peak RSS {mon['rss_mb']:.0f} MB "
          f"(target <= 1024)")
    return 0 if ratio <= 3 and mon["rss_mb"] <= 1024 else 1


if __name__ == "__main__":
    sys.exit(main())
