"""A run SIGKILLed part-way, then resumed: what a crash costs with segments flushed on age.

Run: ``.venv/bin/python -m bench.bench_crash [--store local|s3|both]`` (~1 min a store). The
agent takes 0.2 s a trial (a plain ``def`` sleeping, as a model call waits); 300 tasks x k=10
= 3,000 trials at ``max_concurrency=16`` (~80 trials/s) through ``run_suite`` with its
default ``flush_s`` (10 s), in a process of its own, SIGKILLed 25 s after its first agent
call; then the same call
again resumes the run. Each agent call is logged as it starts (one ``os.write`` to an
``O_APPEND`` file per process, kept by the page cache when the process is killed), so the
trials called by both processes are counted exactly. Printed per store: trials stored at the
kill, lost (a trial of the run held by no segment after the resume), duplicated (held by two
segments), trials run twice, and the bound they must stay under: the flush age's worth of
finished trials plus those in flight, i.e. the calls started in the last ``flush_s`` + 0.2 s
before the kill (~ ``flush_s`` x the run's rate + ``max_concurrency``).
The S3 store is moto's server on a free 127.0.0.1 port.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TASKS, K, CONCURRENCY, LATENCY_S, KILL_AT_S = 300, 10, 16, 0.2, 25.0
AGENT = "bench.bench_crash:slow_agent"
_LOG: list = []


def slow_agent(task, *, seed: int) -> str:
    """0.2 s a trial; each call logged (``EK_CRASH_CALLS``: a folder) before it waits."""
    if not _LOG:
        _LOG.append(os.open(os.path.join(os.environ["EK_CRASH_CALLS"], f"calls-{os.getpid()}"),
                            os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644))
    os.write(_LOG[0], f"{task.task_id} {seed} {time.time():.3f}\n".encode())
    time.sleep(LATENCY_S)
    return task.input.upper()


def child(store: str) -> None:
    import warnings

    from ek_agents.base import TaskSpec
    from ek_agents.execution.harness import run_suite
    from ek_agents.pipeline.chunks import load_agent

    warnings.simplefilter("ignore")
    tasks = [TaskSpec(f"t{i:03d}", input=f"q{i}", gold=f"Q{i}") for i in range(TASKS)]
    t0 = time.perf_counter()
    report = run_suite(load_agent(AGENT), tasks, k=K, seed=0, run_id="crash", rootdir=store,
                       max_concurrency=CONCURRENCY, progress=False)
    print(json.dumps({"s": time.perf_counter() - t0, "n": report.n_trials,
                      "reused": report.detail["reused"]["kept"]}))


def _calls(folder: Path) -> list:
    return [tuple(line.split()) for p in sorted(folder.iterdir())
            for line in p.read_text().splitlines()]


def _held(store: str) -> tuple[set, int]:
    from ek_agents.records.segments import RunSegments
    from ek_agents.store import Store

    segs = RunSegments.load(Store(store), "crash")
    return set(segs.pairs()), segs.duplicates()


def crash_and_resume(store: str, env: dict, tmp: Path) -> dict:
    from ek_agents.records.segments import FLUSH_S

    first, second = tmp / "calls-1", tmp / "calls-2"
    first.mkdir()
    second.mkdir()
    cmd = [sys.executable, "-m", "bench.bench_crash", "--child", store]
    proc = subprocess.Popen(cmd, cwd=ROOT, env={**env, "EK_CRASH_CALLS": str(first)},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    t0 = time.monotonic()  # the clock starts at the first agent call (not the imports)
    while not any(p.stat().st_size for p in first.iterdir()) and proc.poll() is None:
        time.sleep(0.05)
    t0 = time.monotonic()
    while time.monotonic() - t0 < KILL_AT_S and proc.poll() is None:
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    killed_at = time.time()
    proc.communicate()
    alive_s = time.monotonic() - t0
    held_at_kill, _ = _held(store)
    called_1 = _calls(first)
    resumed = subprocess.run(cmd, cwd=ROOT, env={**env, "EK_CRASH_CALLS": str(second)},
                             capture_output=True, text=True)
    if resumed.returncode:
        raise RuntimeError(f"resume: {resumed.stderr.strip()[-2000:]}")
    out = json.loads(resumed.stdout.strip().splitlines()[-1])
    called_2 = _calls(second)
    held, duplicated = _held(store)
    wanted = {(f"t{i:03d}", j) for i in range(TASKS) for j in range(K)}
    pairs_1 = {(t, int(s)) for t, s, _ in called_1}  # seed 0: the seed is the trial
    pairs_2 = {(t, int(s)) for t, s, _ in called_2}
    twice = len(pairs_1 & pairs_2)
    starts = sorted(float(at) for _, _, at in called_1)
    rate = len(starts) / (killed_at - starts[0])  # calls per second while trials ran
    # the flush age's worth of finished trials plus those in flight: the calls started in the
    # last flush_s + one trial's latency before the kill
    bound = sum(at >= killed_at - FLUSH_S - LATENCY_S for at in starts)
    return {"killed_after_s": alive_s, "called_before_kill": len(called_1),
            "stored_at_kill": len(held_at_kill), "resume_called": len(called_2),
            "resume_reused": out["reused"], "report_trials": out["n"],
            "lost": len(wanted - held), "extra": len(held - wanted), "duplicated": duplicated,
            "run_twice": twice, "called_twice_in_one_process": len(called_1) - len(pairs_1)
            + len(called_2) - len(pairs_2), "rate_per_s": rate, "bound": bound,
            "rate_bound": FLUSH_S * rate + CONCURRENCY}


def _moto() -> tuple[subprocess.Popen, dict]:
    import s3fs

    from tests.harness.faultproxy import free_port

    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p",
                             str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    env = {"AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}", "AWS_ACCESS_KEY_ID": "testing",
           "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1"}
    for _ in range(100):
        try:
            s3fs.S3FileSystem(endpoint_url=env["AWS_ENDPOINT_URL"], key="testing",
                              secret="testing", skip_instance_cache=True).mkdir("ek-crash")
            break
        except Exception:  # noqa: BLE001 -- not up yet
            time.sleep(0.2)
    return proc, env


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(prog="bench.bench_crash")
    ap.add_argument("--store", choices=("local", "s3", "both"), default="both")
    a = ap.parse_args(argv)
    results = {}
    for kind in (("local", "s3") if a.store == "both" else (a.store,)):
        with tempfile.TemporaryDirectory(prefix="ek-bench-crash-") as tmp_:
            tmp = Path(tmp_)
            moto = None
            env = {k: v for k, v in os.environ.items() if k != "AWS_PROFILE"}
            if kind == "s3":
                moto, aws = _moto()
                env.update(aws)
                os.environ.update(aws)  # this process reads the bucket too
                store = "s3://ek-crash/bench"
            else:
                store = str(tmp / "store")
            try:
                r = crash_and_resume(store, env, tmp)
            finally:
                if moto is not None:
                    moto.terminate()
                    moto.wait(timeout=20)
        results[kind] = r
        print(f"[{kind}] {TASKS * K:,} trials of a {LATENCY_S} s agent at concurrency "
              f"{CONCURRENCY}, SIGKILLed {r['killed_after_s']:.1f} s after its first call: "
              f"{r['called_before_kill']:,} called, {r['stored_at_kill']:,} stored")
        print(f"[{kind}] resumed: {r['resume_reused']:,} reused, {r['resume_called']:,} run; "
              f"report of {r['report_trials']:,} trials; lost {r['lost']}, duplicated "
              f"{r['duplicated']} (extra {r['extra']}); trials run twice {r['run_twice']}")
        print(f"[{kind}] bound, the flush age's worth + those in flight: {r['bound']} calls "
              f"started in the last 10 + {LATENCY_S} s before the kill (~ flush_s 10 x "
              f"{r['rate_per_s']:.1f} trials/s + {CONCURRENCY} = {r['rate_bound']:.0f}): run "
              f"twice <= bound: {r['run_twice'] <= r['bound']}")
    return results


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        child(sys.argv[2])
    else:
        main()
