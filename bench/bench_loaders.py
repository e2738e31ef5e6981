"""Benchmark: every input loader against mutated inputs -- parsed, or a typed error, nothing else.

Run: ``.venv/bin/python -m bench.bench_loaders [--n 10000] [--seed 11]``. Feeds ``--n`` mutated
inputs (byte flips, truncation, type swaps, deleted keys, 5000-digit integers, NaN/Infinity,
200-50,000-deep nesting, lone surrogates, wrong top-level types, YAML payloads, tau2 ids that
leave the results folder, compression bombs) round-robin to the loaders in :data:`LOADERS`, and
counts each outcome. Besides the input files, the stored documents of a real run (the shop
agents, ``run_suite(persist=True)``, built once) are mutated: its manifest
(``records.documents.read_manifest``), its report and ``gate.json`` (``records.documents.read_run_doc``, the mutated
bytes' sha256 patched into the manifest so the shape check answers), a baseline
(``records.baselines.load_baseline``; a ``success_rate`` contradicting ``n_success / n_trials`` is nonsense
if accepted), and the ``report`` / ``gate`` / ``audit`` commands in-process (``cli.main``: exit
0, 1 or 2 with one stderr line, never an exception; no Prefect API, so the library path):

- ``parsed``: the loader returned and the result passed the nonsense checks;
- ``typed``: an :class:`~ek_agents.errors.EkAgentsError`;
- ``untyped``: any other exception (a bug);
- ``hangs``: a case that ran past ``--timeout`` seconds (SIGALRM; a bug);
- ``nonsense``: parsed, but into something the pipeline must never see (an empty task id, a
  non-finite number, a rate billed at $0 without a warning, a file read from outside the
  results folder, ...; a bug).

The same loaders, seeds and mutators drive ``tests/fuzz/test_loaders.py`` (hypothesis). The
figures are counts (no wall-clock ratio to compare here); ``untyped + hangs + nonsense`` must
be 0.
"""
from __future__ import annotations

import argparse
import contextlib
import copy
import hashlib
import io
import os
import json
import math
import random
import signal
import struct
import tempfile
import time
import traceback
import warnings
import zipfile
import zlib
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ek_agents import cli
from ek_agents.records import baselines, documents
from ek_agents.base import Cost
from ek_agents.bridge import read_inspect_log, read_messages_jsonl, read_tau_bench_results
from ek_agents.cost import dollars
from ek_agents.errors import EkAgentsError
from ek_agents.prices import load_prices
from ek_agents.store import Store, write_url
from ek_agents.suite import parse_suite
from flows.local import configured_api

ROOT = Path(__file__).resolve().parent.parent
FIX = ROOT / "tests"

# ----------------------------------------------------------------------------- seeds


def _inspect_json_seed() -> dict:
    doc = json.loads((FIX / "fixtures/inspect/calc.json").read_text())
    doc["samples"] = [{k: v for k, v in s.items() if k != "events"} for s in doc["samples"][:2]]
    return doc


def _eval_members() -> dict:
    """header + two samples of the Inspect fixture, events dropped (small, same shapes)."""
    doc = _inspect_json_seed()
    header = {k: v for k, v in doc.items() if k != "samples"}
    out = {"header.json": header}
    for s in doc["samples"]:
        out[f"samples/{s['id']}_epoch_{s['epoch']}.json"] = s
    return out


def _suite_seed() -> str:
    return """name: fz
version: "1"
checker: output
tools:
  get_order:
    description: Look up one order.
    params:
      order_id: {type: string, required: true, importance: 2}
  refund:
    destructive: true
    params:
      order_id: {type: string, required: true}
      amount: {type: number, required: true, importance: 5}
tasks:
  - task_id: t1
    input: "Refund order O-1."
    gold: {output: done}
    value: 2.0
    slice: refund
    tools: [get_order, refund]
  - task_id: t2
    input: hello
    gold: {output: hi}
    meta: {x: [1, 2]}
"""


def _suite_jsonl_seed() -> str:
    head = {"suite": {"name": "fz", "checker": "output",
                      "tools": {"get_order": {"params": {"order_id": "string"}}}}}
    rows = [{"task_id": "t1", "input": "a", "gold": {"output": "x"}, "value": 1.5},
            {"task_id": "t2", "input": "b", "gold": {"output": "y"}, "tools": ["get_order"]}]
    return "\n".join(json.dumps(r) for r in [head] + rows) + "\n"


def _prices_seed() -> dict:
    return {"m-chat": {"input_cost_per_token": 1.5e-7, "output_cost_per_token": 6e-7,
                       "cache_read_input_token_cost": 7.5e-8, "input_cost_per_token_batches": 7.5e-8,
                       "input_cost_per_token_above_200k_tokens": 3e-7, "mode": "chat"},
            "m-tier": {"input_cost_per_token": 1e-6, "output_cost_per_token": 2e-6, "mode": "chat",
                       "tiered_pricing": [{"range": [0, 32000], "input_cost_per_token": 1e-6,
                                           "output_cost_per_token": 2e-6}]},
            "m-alias": {"alias_of": "m-chat"},
            "m-emb": {"input_cost_per_token": 1e-8, "mode": "embedding"}}


def _messages_seed() -> str:
    rows = [{"task_id": "t1", "model": "m", "success": True, "usage": {"prompt_tokens": 10, "completion_tokens": 2},
             "messages": [{"role": "user", "content": "hi"},
                          {"role": "assistant", "content": None, "tool_calls": [
                              {"id": "c1", "type": "function",
                               "function": {"name": "get", "arguments": "{\"a\": 1}"}}]},
                          {"role": "tool", "tool_call_id": "c1", "content": "ok"},
                          {"role": "assistant", "content": [{"type": "text", "text": "done"}]}]},
            {"task_id": "t2", "messages": [
                {"role": "assistant", "content": [{"type": "tool_use", "id": "u1", "name": "x", "input": {}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "u1", "content": "e",
                                              "is_error": True}]},
                {"type": "function_call", "call_id": "f1", "name": "y", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "f1", "output": "z"}]}]
    return "\n".join(json.dumps(r) for r in rows) + "\n"


def _tau2_seed() -> dict:
    return json.loads((FIX / "bridge/fixtures/tau2_results.json").read_text())


def _tau1_seed() -> list:
    return json.loads((FIX / "bridge/fixtures/tau_bench_v1.json").read_text())


SEEDS: dict[str, Any] = {}


def seeds() -> dict[str, Any]:
    """The valid document each loader starts from (built once)."""
    if not SEEDS:
        SEEDS.update({
            "suite_yaml": _suite_seed(), "suite_jsonl": _suite_jsonl_seed(),
            "prices": _prices_seed(), "tau_v1": _tau1_seed(), "tau2": _tau2_seed(),
            "tau2_dir": _tau2_seed(), "messages_jsonl": _messages_seed(),
            "inspect_json": _inspect_json_seed(), "inspect_eval_zstd": _eval_members(),
            "inspect_eval_deflate": _eval_members(), "store_json": {"a": [1, 2.5, "x"], "b": {"c": None}},
            "store_baseline": {"schema_version": 1, "success_rate": 0.5, "n_trials": 4},
        })
        docs = stored_docs()
        SEEDS.update({"run_manifest": docs["manifest"], "run_report": docs["report"],
                      "baseline": docs["baseline"], "gate_json": docs["gate"],
                      "cli_report": docs, "cli_gate": docs, "cli_audit": docs})
    return SEEDS


# ---------------------------------------------------------------- stored runs (built once)

#: The run whose documents are mutated, the baseline it was gated against, and where each
#: mutated document sits in the store.
RUN, BASELINE = "small-2", "shop-small"
DOC_KEYS = {"manifest": f"runs/{RUN}/manifest.json", "report": f"runs/{RUN}/report.json",
            "gate": f"runs/{RUN}/gate.json", "baseline": f"baselines/{BASELINE}.json"}
_STORE: dict[str, bytes] = {}


def stored_run() -> dict[str, bytes]:
    """Key -> bytes of a real store: the shop agents run with ``run_suite(persist=True)``
    (``tests/report/reportkit.make_runs``, k=2), ``small-0`` promoted as baseline
    ``shop-small`` and ``small-2`` gated against it; only what ``small-2`` and the baseline
    need is kept (copied into a fresh ``memory://`` store for every case)."""
    if not _STORE:
        from tests.report.reportkit import make_runs

        with tempfile.TemporaryDirectory() as tmp:
            make_runs(tmp, k=2)
            for path in sorted(Path(tmp).rglob("*")):
                key = path.relative_to(tmp).as_posix()
                if path.is_file() and (key.startswith(("runs/small-0/", f"runs/{RUN}/", "baselines/"))
                                       or not key.startswith("runs/")):
                    _STORE[key] = path.read_bytes()
    return _STORE


def stored_docs() -> dict[str, Any]:
    """The four stored documents that are mutated: manifest, report, gate.json, baseline."""
    return {name: json.loads(stored_run()[key]) for name, key in DOC_KEYS.items()}


def _store_with(rnd: random.Random, doc: str, data: bytes) -> Store:
    """A fresh store holding the real runs, document ``doc`` replaced by ``data``; a run
    document's sha256 is patched into the manifest, so the shape check (not the digest check)
    is what answers."""
    store = Store(_uniq(rnd))
    files = dict(stored_run())
    files[DOC_KEYS[doc]] = data
    if doc in ("report", "gate"):
        man = json.loads(files[DOC_KEYS["manifest"]])
        man["artifacts"][DOC_KEYS[doc]] = hashlib.sha256(data).hexdigest()
        files[DOC_KEYS["manifest"]] = json.dumps(man).encode()
    for key, blob in files.items():
        store.write_bytes(key, blob)
    return store


# ------------------------------------------------------------------------- .eval writer

def eval_zip(members: dict[str, bytes], method: str) -> bytes:
    """An Inspect ``.eval`` archive of ``members``: DEFLATE, or zstd (zip method 93)."""
    buf = io.BytesIO()
    if method == "deflate":
        with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
            for name, data in members.items():
                z.writestr(name, data)
        return buf.getvalue()
    import zstandard

    comp = zstandard.ZstdCompressor(level=1)
    sizes = {}
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as z:
        for name, data in members.items():
            packed = comp.compress(data)
            sizes[name] = (len(data), zlib.crc32(data) & 0xFFFFFFFF)
            z.writestr(zipfile.ZipInfo(name, (2026, 1, 1, 0, 0, 0)), packed)
    raw = bytearray(buf.getvalue())
    # method 93 + uncompressed size and CRC, in the local headers and the central directory
    for sig, meth, crc, usize in ((b"PK\x03\x04", 8, 14, 22), (b"PK\x01\x02", 10, 16, 24)):
        pos = raw.find(sig)
        while pos >= 0:
            name_at = 30 if sig == b"PK\x03\x04" else 46
            nlen = struct.unpack_from("<H", raw, pos + (26 if sig == b"PK\x03\x04" else 28))[0]
            name = bytes(raw[pos + name_at:pos + name_at + nlen]).decode()
            if name in sizes:
                struct.pack_into("<H", raw, pos + meth, 93)
                struct.pack_into("<L", raw, pos + crc, sizes[name][1])
                struct.pack_into("<L", raw, pos + usize, sizes[name][0])
            pos = raw.find(sig, pos + 4)
    return bytes(raw)


# ----------------------------------------------------------------------------- mutators

_BIG_INT = "1" + "0" * 5000
_MARK = "\x00EKFZ\x00"  # a placeholder swapped for raw text after json.dumps


def _paths(doc: Any, at: tuple = (), out: list | None = None, limit: int = 400) -> list:
    out = [] if out is None else out
    if len(out) >= limit:
        return out
    out.append(at)
    if isinstance(doc, dict):
        for k, v in doc.items():
            _paths(v, at + (k,), out, limit)
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            _paths(v, at + (i,), out, limit)
    return out


def _get(doc: Any, path: tuple) -> Any:
    for p in path:
        doc = doc[p]
    return doc


def _set(doc: Any, path: tuple, value: Any) -> Any:
    if not path:
        return value
    _get(doc, path[:-1])[path[-1]] = value
    return doc


def _odd_value(rnd: random.Random) -> tuple[Any, str | None]:
    """A value of a surprising type, and raw JSON text to put in its place (or None)."""
    pick = rnd.randrange(16)
    depth = rnd.choice([200, 2000, 50000])
    raw = {0: _BIG_INT, 1: "NaN", 2: "Infinity", 3: "-Infinity", 4: "1e999",
           5: "[" * depth + "]" * depth, 6: '"\\ud800x"', 7: "-" + _BIG_INT}.get(pick)
    if raw is not None:
        return _MARK, raw
    return rnd.choice([None, True, 1.5, -3, "", "xxx", [], {}, [1, "a"], {"k": [None]}, 10 ** 30,
                       -1e308, 0.5]), None


def mutate_doc(doc: Any, rnd: random.Random) -> str:
    """``doc`` (JSON data) with one structural mutation, as JSON text."""
    doc = copy.deepcopy(doc)
    raw = None
    kind = rnd.randrange(5)
    paths = _paths(doc)
    path = rnd.choice(paths)
    if kind == 0 or not path:  # swap a value's type
        value, raw = _odd_value(rnd)
        doc = _set(doc, path, value)
    elif kind == 1:  # delete a key / an item
        parent = _get(doc, path[:-1])
        del parent[path[-1]]
    elif kind == 2:  # wrong top-level type
        doc = rnd.choice([[], {}, 1.5, "x", None, [doc], {"wrapped": doc}, True])
    elif kind == 3:  # a lone surrogate inside a string, or a key renamed
        target = _get(doc, path)
        if isinstance(target, str):
            doc = _set(doc, path, target[:3] + "\udc80" + target[3:])
        elif isinstance(target, dict) and target:
            k = rnd.choice(list(target))
            target[str(k) + "_"] = target.pop(k)
        else:
            doc = _set(doc, path, "\ud83d")
    else:  # duplicate a subtree somewhere else (shape confusion)
        other = _get(doc, rnd.choice(paths))
        doc = _set(doc, path, copy.deepcopy(other)) if path else doc
    text = json.dumps(doc, ensure_ascii=rnd.random() < 0.5, allow_nan=True)
    if raw is not None:
        text = text.replace(json.dumps(_MARK), raw, 1)
    return text


def to_bytes(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


YAML_PAYLOADS = [
    "a: &a [x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"
    "d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: [*e,*e,*e,*e,*e,*e]\n",
    "tasks: !!python/object/apply:os.system ['true']\n",
    "tasks:\n  - &t {task_id: a}\n  - <<: *t\n    task_id: b\n",
    "tasks: !!binary aGVsbG8=\n", "tasks: !!set {a, b}\n", "tasks:\n  - task_id: 2020-01-01\n",
    "tasks: [" * 3000 + "]" * 3000 + "\n", "tasks:\n  - task_id: a\n    value: .inf\n",
    "tasks:\n  - task_id: a\n    value: 1" + "0" * 5000 + "\n", "? [a, b]\n: c\n", "--- a\n--- b\n",
    "tasks:\n  - task_id: \"\\ud800\"\n", "\t- bad: [\n", "tasks: {a: 1, a: 2}\n",
]


def mutate_bytes(data: bytes, rnd: random.Random) -> bytes:
    """Byte-level damage: flips, truncation, inserted invalid UTF-8."""
    if not data:
        return b"\xff"
    kind = rnd.randrange(4)
    b = bytearray(data)
    if kind == 0:
        for _ in range(rnd.randint(1, 4)):
            b[rnd.randrange(len(b))] = rnd.randrange(256)
    elif kind == 1:
        del b[rnd.randrange(len(b)):]
    elif kind == 2:
        at = rnd.randrange(len(b))
        b[at:at] = rnd.choice([b"\xff\xfe", b"\xed\xa0\x80", b"\xc3", b"\x00", b"\xef\xbb\xbf"])
    else:
        at = rnd.randrange(len(b))
        b[at:at] = b[max(0, at - 50):at]
    return bytes(b)


# ------------------------------------------------------------------------------ loaders

class Nonsense(AssertionError):
    """A loader returned something the pipeline must never see."""


def _finite(x: Any, what: str) -> None:
    if isinstance(x, float) and not math.isfinite(x):
        raise Nonsense(f"{what} is {x}")


def check_episodes(eps: list) -> None:
    for e in eps:
        if not isinstance(e.task_id, str) or not e.task_id.strip():
            raise Nonsense(f"episode with task id {e.task_id!r}")
        if e.success not in (None, True, False):
            raise Nonsense(f"success {e.success!r}")
        if e.cost is not None:
            for f in ("input_tokens", "output_tokens", "cached_input_tokens", "reasoning_tokens"):
                v = getattr(e.cost, f)
                if not isinstance(v, int) or v < 0:
                    raise Nonsense(f"cost.{f} = {v!r}")
            _finite(e.cost.latency_s, "latency_s")
        if e.task_id == "OUTSIDE-MARKER":
            raise Nonsense("read a simulation from outside the results folder")
        e.to_json()  # what the pipeline does next: must not fail untyped


def _uniq(rnd: random.Random) -> str:
    return f"memory://ekfz/{rnd.getrandbits(64):016x}"


def _suite_from(path: str) -> Callable:
    def load(data: bytes, rnd: random.Random) -> Any:
        s = parse_suite(data, path=path)
        for t in s:
            if not t.task_id.strip():
                raise Nonsense("suite task with an empty id")
            _finite(t.value, "task value")
        s.to_json()
        return s

    return load


load_suite_yaml, load_suite_jsonl = _suite_from("fz.yaml"), _suite_from("fz.jsonl")


def load_prices_bytes(data: bytes, rnd: random.Random) -> Any:
    url = _uniq(rnd) + "/prices.json"
    write_url(url, data)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        table = load_prices(url)
    warned = " ".join(str(w.message) for w in seen)
    try:
        raw = json.loads(data)
    except Exception:
        raw = {}
    for name, p in table.items():
        for f in ("input", "output", "cached_input", "reasoning", "cache_write"):
            v = getattr(p, f)
            if v is not None and (not math.isfinite(v) or v < 0):
                raise Nonsense(f"{name}.{f} = {v}")
        info = raw.get(name) if isinstance(raw, dict) else None
        if isinstance(info, dict) and info.get("mode") == "chat" and not info.get("tiered_pricing"):
            for key in ("input_cost_per_token", "output_cost_per_token"):
                if info.get(key) is None and repr(name) not in warned:
                    raise Nonsense(f"{name}: {key} missing, billed at $0 without a warning")
        try:
            usd = dollars(Cost(input_tokens=1000, output_tokens=1000), p)
        except EkAgentsError:
            continue
        if not math.isfinite(usd) or usd < 0:
            raise Nonsense(f"dollars = {usd}")
    return table


def _episodes_from(reader: Callable, filename: str) -> Callable:
    """A loader: write the bytes as ``filename`` in memory, read them with ``reader``."""
    def load(data: bytes, rnd: random.Random) -> Any:
        url = f"{_uniq(rnd)}/{filename}"
        write_url(url, data)
        eps = reader(url)
        check_episodes(eps)
        return eps

    return load


_load_tau = _episodes_from(read_tau_bench_results, "results.json")
load_messages = _episodes_from(read_messages_jsonl, "m.jsonl")
load_inspect = _episodes_from(read_inspect_log, "log.eval")


def load_tau2_dir(data: bytes, rnd: random.Random) -> Any:
    """``data`` is the dir-format results.json; the simulations come from the seed, and a
    planted simulation sits outside the folder (read only by a traversing id)."""
    base = _uniq(rnd)
    write_url(f"{base}/run/results.json", data)
    for sim in seeds()["tau2"]["simulations"]:
        write_url(f"{base}/run/simulations/{sim['id']}.json", json.dumps(sim).encode())
    planted = dict(seeds()["tau2"]["simulations"][0], id="outside", task_id="OUTSIDE-MARKER")
    write_url(f"{base}/outside.json", json.dumps(planted).encode())
    eps = read_tau_bench_results(f"{base}/run" if rnd.random() < 0.3 else f"{base}/run/results.json")
    check_episodes(eps)
    return eps


def _tau2_dir_doc(rnd: random.Random) -> Any:
    doc = copy.deepcopy(seeds()["tau2"])
    sims = doc.pop("simulations")
    doc["simulations"] = []
    doc["simulation_index"] = [{"id": s["id"], "task_id": s["task_id"], "trial": s["trial"]} for s in sims]
    if rnd.random() < 0.3:
        doc["simulation_index"][0]["id"] = rnd.choice(["../outside", "../../outside", "/outside", "a/../../outside"])
    if rnd.random() < 0.2:
        del doc["simulation_index"]
    return doc


def load_store_json(data: bytes, rnd: random.Random) -> Any:
    store = Store(_uniq(rnd))
    store.write_bytes("runs/r1/report.json", data)
    return store.read_json("runs/r1/report.json")


def load_store_baseline(data: bytes, rnd: random.Random) -> Any:
    store = Store(_uniq(rnd))
    store.write_bytes("baselines/b1.json", data)
    return store.load_baseline("b1")


def _check_report(rep: Any, what: str) -> None:
    """A report the pipeline would use: finite figures, counts that agree."""
    rep = rep.to_dict() if hasattr(rep, "to_dict") else rep
    n, ok, rate = rep.get("n_trials"), rep.get("n_success"), rep.get("success_rate")
    if not (isinstance(n, int) and isinstance(ok, int) and 0 <= ok <= n):
        raise Nonsense(f"{what}: n_success {ok!r} of n_trials {n!r}")
    if n and not (isinstance(rate, (int, float)) and math.isclose(rate, ok / n, abs_tol=1e-9)):
        raise Nonsense(f"{what}: success_rate {rate!r} but n_success / n_trials = {ok}/{n}")
    for f in ("total_dollars", "cost_per_success"):
        v = (rep.get("cost") or {}).get(f)
        if v is not None and not isinstance(v, (int, float, str)):
            raise Nonsense(f"{what}: cost.{f} = {v!r}")
        if isinstance(v, float) and (math.isnan(v) or v < 0):
            raise Nonsense(f"{what}: cost.{f} = {v!r}")


def load_run_manifest(data: bytes, rnd: random.Random) -> Any:
    """``records.documents.read_manifest`` of a real run whose manifest.json is ``data``, then the
    report it lists (a verified read: a changed digest is a DigestMismatch)."""
    store = _store_with(rnd, "manifest", data)
    man = documents.read_manifest(store, RUN)
    if man.run_id != RUN:
        raise Nonsense(f"manifest of run {man.run_id!r} read as {RUN!r}")
    man.to_json()
    _check_report(documents.read_run_doc(store, man, "report"), "report")
    return man


def load_run_report(data: bytes, rnd: random.Random) -> Any:
    store = _store_with(rnd, "report", data)
    rep = documents.read_run_doc(store, documents.read_manifest(store, RUN), "report")
    _check_report(rep, "report")
    return rep


def load_gate_json(data: bytes, rnd: random.Random) -> Any:
    store = _store_with(rnd, "gate", data)
    gate = documents.read_run_doc(store, documents.read_manifest(store, RUN), "gate")
    if not isinstance(gate.get("passed"), bool):
        raise Nonsense(f"gate.json with passed = {gate.get('passed')!r}")
    return gate


def load_baseline_doc(data: bytes, rnd: random.Random) -> Any:
    """``records.baselines.load_baseline`` of a stored baseline (validated by ``check_baseline``)."""
    store = _store_with(rnd, "baseline", data)
    doc = baselines.load_baseline(store, BASELINE)
    if not isinstance(doc, dict) or not isinstance(doc.get("report"), dict):
        raise Nonsense(f"baseline {doc!r:.80}")
    _check_report(doc["report"], "baseline report")
    return doc


_CLI_ARGS = {"cli_report": ["report", RUN], "cli_gate": ["gate", RUN, "--baseline", BASELINE],
             "cli_audit": ["audit", RUN]}


def _cli_from(name: str) -> Callable:
    """A loader: ``data`` is ``<document>\0<bytes>`` (document: manifest, report, gate,
    baseline; bytes without that prefix replace the report); the CLI command ``name`` runs
    in-process on a store holding it. The invariant: exit 0, 1 or 2, and a refusal is one
    line on stderr; an exception out of ``cli.main`` is untyped."""
    def load(data: bytes, rnd: random.Random) -> Any:
        doc, sep, rest = data.partition(b"\0")
        doc = doc.decode("ascii", "replace")
        if not sep or doc not in DOC_KEYS:
            doc, rest = "report", data
        if configured_api() is not None:
            raise RuntimeError("a Prefect API is configured: unset PREFECT_API_URL to fuzz the CLI")
        args = list(_CLI_ARGS[name])
        if name == "cli_audit" and doc == "baseline":
            args = ["audit", "--baseline", BASELINE]
        store = _store_with(rnd, doc, rest)
        out, err = io.StringIO(), io.StringIO()
        shown = warnings.showwarning
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = cli.main(args + ["--store", store.url])
        finally:
            warnings.showwarning = shown
        lines = [ln for ln in err.getvalue().splitlines() if ln.strip()]
        if code not in (0, 1, 2):
            raise Nonsense(f"exit {code}: {err.getvalue()[:200]!r}")
        if code and len(lines) != 1:
            raise Nonsense(f"exit {code} with {len(lines)} stderr lines: {err.getvalue()[:200]!r}")
        if code:
            raise CliRefused(f"exit {code}")
        return code

    return load


class CliRefused(EkAgentsError):
    """The CLI refused the input the right way (exit 1 or 2, one line): counted as typed."""


#: loader name -> (load(bytes, rnd), how a seed becomes mutated bytes)
LOADERS: dict[str, Callable] = {
    "suite_yaml": load_suite_yaml, "suite_jsonl": load_suite_jsonl, "prices": load_prices_bytes,
    "tau_v1": _load_tau, "tau2": _load_tau, "tau2_dir": load_tau2_dir,
    "messages_jsonl": load_messages, "inspect_json": load_inspect,
    "inspect_eval_zstd": load_inspect, "inspect_eval_deflate": load_inspect,
    "store_json": load_store_json, "store_baseline": load_store_baseline,
    "run_manifest": load_run_manifest, "run_report": load_run_report, "baseline": load_baseline_doc,
    "gate_json": load_gate_json, **{name: _cli_from(name) for name in _CLI_ARGS},
}

#: The stored document each loader's case mutates (the CLI loaders pick one per case).
_DOC_OF = {"run_manifest": "manifest", "run_report": "report", "baseline": "baseline",
           "gate_json": "gate"}


def _stored_case(name: str, rnd: random.Random) -> bytes:
    """A mutated stored document: byte damage, a structural mutation, or (report, baseline) a
    success_rate / n_success that contradicts n_success / n_trials."""
    doc = _DOC_OF.get(name) or rnd.choice(["manifest", "report", "gate", "baseline"])
    seed = stored_docs()[doc]
    how = rnd.random()
    if how < 0.2:
        data = mutate_bytes(json.dumps(seed).encode(), rnd)
    elif how < 0.35 and doc in ("report", "baseline"):
        d = copy.deepcopy(seed)
        rep = d["report"] if doc == "baseline" else d
        field = rnd.choice(["success_rate", "n_success", "n_trials"])
        rep[field] = rnd.choice([0.0, 1.0, 0.99, rep["success_rate"] / 2, rep[field] + 1, -1])
        data = to_bytes(json.dumps(d))
    else:
        data = to_bytes(mutate_doc(seed, rnd))
    return (doc.encode() + b"\0" + data) if name.startswith("cli_") else data


def make_case(name: str, rnd: random.Random) -> bytes:
    """One mutated input for loader ``name``."""
    if name in _DOC_OF or name.startswith("cli_"):
        return _stored_case(name, rnd)
    seed = seeds()[name]
    how = rnd.random()
    if name == "suite_yaml":
        if how < 0.25:
            return to_bytes(rnd.choice(YAML_PAYLOADS))
        if how < 0.5:
            return mutate_bytes(seed.encode(), rnd)
        import yaml

        return to_bytes(mutate_doc(yaml.safe_load(seed), rnd))  # JSON is YAML
    if name in ("suite_jsonl", "messages_jsonl"):
        lines = seed.splitlines()
        if how < 0.3:
            return mutate_bytes(seed.encode(), rnd)
        i = rnd.randrange(len(lines))
        lines[i] = mutate_doc(json.loads(lines[i]), rnd) if how < 0.9 else rnd.choice(YAML_PAYLOADS).replace("\n", " ")
        return to_bytes("\n".join(lines) + "\n")
    if name.startswith("inspect_eval"):
        members = {k: json.dumps(v).encode() for k, v in seed.items()}
        if how < 0.6:
            key = rnd.choice(list(members))
            members[key] = to_bytes(mutate_doc(seed[key], rnd))
        elif how < 0.7:
            key = rnd.choice(list(members))
            members[key] = mutate_bytes(members[key], rnd)
        elif how < 0.75:  # a compression bomb: a member that inflates to 100 MB
            members[rnd.choice(list(members))] = b" " * (100 * 1024 * 1024)
        data = eval_zip(members, "zstd" if name.endswith("zstd") else "deflate")
        return mutate_bytes(data, rnd) if how >= 0.75 else data
    doc = _tau2_dir_doc(rnd) if name == "tau2_dir" else seed
    if how < 0.3:
        return mutate_bytes(json.dumps(doc).encode(), rnd)
    if how < 0.35:
        return to_bytes(rnd.choice(YAML_PAYLOADS))
    return to_bytes(mutate_doc(doc, rnd))


# ------------------------------------------------------------------------------ running

class Hang(Exception):
    pass


@contextlib.contextmanager
def time_limit(seconds: float):
    """Raise :class:`Hang` in the main thread after ``seconds`` (SIGALRM)."""
    def on_alarm(signum, frame):
        raise Hang(f"over {seconds} s")

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def run_case(name: str, data: bytes, rnd: random.Random, timeout: float = 5.0) -> tuple[str, str]:
    """``(outcome, detail)``: outcome is parsed / typed / untyped / hang / nonsense."""
    try:
        with time_limit(timeout):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                LOADERS[name](data, rnd)
    except Hang as exc:
        return "hang", str(exc)
    except Nonsense as exc:
        return "nonsense", str(exc)
    except EkAgentsError as exc:
        return "typed", type(exc).__name__
    except Exception as exc:  # noqa: BLE001 - counting what escapes is the point
        tb = traceback.extract_tb(exc.__traceback__)[-1]
        return "untyped", (f"{type(exc).__name__}: {str(exc)[:160]} "
                           f"({Path(tb.filename).name}:{tb.lineno} {tb.name})")
    finally:
        _clear_memory_fs()
    return "parsed", ""


def _clear_memory_fs() -> None:
    from fsspec.implementations.memory import MemoryFileSystem

    MemoryFileSystem.store.clear()
    MemoryFileSystem.pseudo_dirs[:] = [""]


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--timeout", type=float, default=5.0)
    args = ap.parse_args(argv)
    rnd = random.Random(args.seed)
    names = list(LOADERS)
    counts: Counter = Counter()
    per_loader: dict[str, Counter] = {n: Counter() for n in names}
    bad: list[str] = []
    t0 = time.perf_counter()
    for i in range(args.n):
        name = names[i % len(names)]
        data = make_case(name, rnd)
        outcome, detail = run_case(name, data, rnd, args.timeout)
        counts[outcome] += 1
        per_loader[name][outcome] += 1
        if outcome in ("untyped", "hang", "nonsense") and len(bad) < 30:
            bad.append(f"{name}: {outcome}: {detail}")
    elapsed = time.perf_counter() - t0
    print(f"{args.n} mutated inputs over {len(names)} loaders in {elapsed:.1f} s (seed {args.seed})")
    print("| loader | parsed | typed | untyped | hangs | nonsense |\n|---|---|---|---|---|---|")
    for n in names + ["total"]:
        c = counts if n == "total" else per_loader[n]
        print(f"| {n} | {c['parsed']} | {c['typed']} | {c['untyped']} | {c['hang']} | {c['nonsense']} |")
    for line in bad:
        print("  ", line)
    return {"inputs": args.n, "parsed": counts["parsed"], "typed": counts["typed"],
            "untyped": counts["untyped"], "hangs": counts["hang"], "nonsense": counts["nonsense"]}


if __name__ == "__main__":
    main()
