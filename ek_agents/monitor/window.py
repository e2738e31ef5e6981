"""One monitor window: new traces in, judged (a sample stratified by slice), billed, recorded.

:func:`run_window` reads what the series' ledger has not consumed
(:func:`~ek_agents.monitor.ingest.read_new_traces`), makes episodes of it, judges them (every
episode, or ``judge_sample`` of them allocated to the slices in proportion to their traces, at
least one each, seeded by the window), bills the agent's model calls and -- apart -- the
judges' own calls (the **evaluation cost**), and stores the window record
(``monitor/<series>/windows/<id>.json``), its episodes and the ledger. Verdicts are cached by
(episode digest, judge identity) in ``monitor/<series>/verdicts/<judge>.json``: a verdict
already paid for is never asked again (and the record counts what was reused).

Re-running a window id that is recorded returns the record as stored (``reused=True``): no
trace read, no episode made, no judge called. Several judges combine as
:func:`~ek_agents.scoring.facades.estimate_quality` combines signals (``combine="min"``: every
judge must pass, a FAIL stops the costlier judges; ``"mean"``: the mean score >= 0.5).
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import math
import random
from collections.abc import Mapping, Sequence
from typing import Any, Optional

from pydantic import BaseModel, Field

from ..base import Cost, Episode
from ..bridge.otel import gc_paused
from ..core import canonical_json
from ..cost import cost_by_model
from ..errors import BridgeError, InvalidInput
from ..identity.agentid import agent_identity
from ..scoring.facades import estimate_quality
from ..store import Store, open_store
from ..store.sources import monitor_key
from .ingest import IngestCounts, Ledger, episodes_of_traces, read_new_traces

__all__ = ["WindowOptions", "WindowRecord", "run_window", "load_ledger", "load_window",
           "window_episodes", "episode_digest", "judge_identity", "new_window_id", "cost_by_model"]


class WindowOptions(BaseModel):
    """How a window reads and judges its traces (recorded with it)."""

    group_by: str = "trace"
    task_attr: Optional[str] = None
    slice_attr: Optional[str] = None
    judge_sample: Optional[int] = Field(default=None, ge=1)
    combine: str = "min"
    seed: int = 0


class WindowRecord(BaseModel):
    """What a window stored: enough to recompute its rate and alert without reading a trace."""

    schema_version: int = 1
    window_id: str
    series: str
    created: str
    source: str
    options: WindowOptions
    counts: IngestCounts
    episodes: int
    episodes_digest: str = ""
    slices: dict[str, dict[str, int]] = Field(default_factory=dict)
    """``{slice: {traces, judged, passed}}``."""
    verdicts: dict[str, bool] = Field(default_factory=dict)
    """The combined verdict of each judged episode, by ``task_id/trial``."""
    judges: list[str] = Field(default_factory=list)
    judge_calls: int = 0
    judge_cached: int = 0
    agent_dollars: Optional[float] = None
    dollars_per_trace: Optional[float] = None
    dollars_var: Optional[float] = None
    agent_per_model: dict[str, dict[str, float]] = Field(default_factory=dict)
    agent_tokens: dict[str, int] = Field(default_factory=dict)
    evaluation_dollars: Optional[float] = None
    evaluation_per_model: dict[str, dict[str, float]] = Field(default_factory=dict)
    reused: bool = False
    """True when this call found the window recorded and returned it as stored (then
    ``judge_calls`` and ``judge_cached`` are this call's: 0)."""

    @property
    def new_episodes(self) -> int:
        """Episodes this call made: 0 for a reused window."""
        return 0 if self.reused else self.episodes


def new_window_id() -> str:
    """A window id from the UTC time: ``w20261207T064100Z``."""
    return _dt.datetime.now(_dt.timezone.utc).strftime("w%Y%m%dT%H%M%SZ")


def episode_digest(ep: Episode) -> str:
    """sha256 of what a judge reads of an episode (its output and steps) and which trace it is."""
    doc = {"output": ep.output, "steps": [s.to_dict() if hasattr(s, "to_dict") else repr(s)
                                          for s in ep.trajectory.steps],
           "group": (ep.meta or {}).get("group")}
    return hashlib.sha256(canonical_json(doc)).hexdigest()


def judge_identity(judge: Any) -> str:
    """A judge's identity: its ``identity`` attribute (EndpointJudge: model, endpoint, rubric,
    prompt), else the digest of its code and state; refused when part of it cannot be
    identified (a cached verdict would be reused for a different judge)."""
    ident = getattr(judge, "identity", None)
    if isinstance(ident, str) and ident:
        return ident
    a = agent_identity(judge)
    if a.undigestable:
        raise InvalidInput(f"judge {judge!r:.60} cannot be identified ({sorted(a.undigestable)}); "
                           "give it an `identity` string naming its model and rubric")
    return hashlib.sha256(canonical_json(a.to_dict())).hexdigest()


def _key(ep: Episode) -> str:
    return f"{ep.task_id}/{(ep.meta or {}).get('trial', 0)}"


def load_ledger(store: Store, series: str) -> Ledger:
    """The series' ledger (empty for a new series)."""
    key = monitor_key(series, "ledger.json")
    return Ledger.model_validate(store.read_json(key)) if store.exists(key) else Ledger()


def load_window(store: Store, series: str, window_id: str) -> WindowRecord:
    """A stored window record."""
    return WindowRecord.model_validate(store.read_json(monitor_key(series, "windows",
                                                                   f"{window_id}.json")))


def window_episodes(store: Store, series: str, window_id: str) -> list[Episode]:
    """A stored window's episodes (verified against the record's digest)."""
    rec = load_window(store, series, window_id)
    key = monitor_key(series, "windows", f"{window_id}.episodes.jsonl")
    data = store.read_bytes(key)
    if hashlib.sha256(data).hexdigest() != rec.episodes_digest:
        raise BridgeError(f"window {window_id!r}: its episodes do not hash to the digest its "
                          "record holds (changed after the window); re-run it as a new window")
    return [Episode.from_json(line) for line in data.decode().splitlines() if line.strip()]


def _sample(episodes: list, n: Optional[int], seed: int, window_id: str) -> list:
    if n is None or n >= len(episodes):
        return list(episodes)
    by: dict[str, list] = {}
    for ep in episodes:
        by.setdefault(ep.meta["slice"], []).append(ep)
    if n < len(by):
        raise InvalidInput(f"judge_sample={n} is fewer than the window's {len(by)} slices; judge "
                           "at least one trace of each slice")
    total = len(episodes)
    alloc = {s: max(1, math.floor(n * len(v) / total)) for s, v in by.items()}
    for s in sorted(by, key=lambda s: -(n * len(by[s]) / total) % 1):
        if sum(alloc.values()) >= n:
            break
        if alloc[s] < len(by[s]):
            alloc[s] += 1
    rng = random.Random(f"{seed}/{window_id}")
    out = []
    for s in sorted(by):
        out.extend(rng.sample(by[s], min(alloc[s], len(by[s]))))
    return out


class _Cached:
    """One judge as a Signal for estimate_quality, answering from the cache when it can."""

    def __init__(self, judge: Any, ident: str, cache: dict, calls: list, counter: list) -> None:
        self.judge, self.ident, self.cache, self.calls, self.counter = judge, ident, cache, calls, counter
        self.name = getattr(judge, "name", None) or ident[:12]
        self.cost_tier = getattr(judge, "cost_tier", 5)
        self.digest: str = ""
        self.input: Any = None

    def __call__(self, output: Any) -> float:
        hit = self.cache.get(self.digest)
        if hit is not None:
            self.counter[1] += 1
            return float(hit[0])
        self.counter[0] += 1
        if hasattr(self.judge, "judge"):
            reply = self.judge.judge(output, self.input)
            score, why, call = (1.0 if reply.passed else 0.0), reply.rationale, reply.call
        else:
            score, why, call = float(self.judge(output)), "", None
        if call is not None:
            self.calls.append(call)
        self.cache[self.digest] = [score, why]
        return score


def run_window(source: Any, series: str, *, store: Any = None, judges: Sequence[Any] = (),
               prices: Optional[Mapping] = None, window_id: Optional[str] = None,
               options: Optional[WindowOptions] = None) -> WindowRecord:
    """Run one window of ``series`` over ``source`` (see the module docstring)."""
    st = open_store(store)
    opts = options or WindowOptions()
    if opts.combine not in ("min", "mean"):
        raise InvalidInput(f"combine must be 'min' or 'mean', got {opts.combine!r}")
    wid = st.validate_name(window_id or new_window_id(), what="window id")
    rec_key = monitor_key(series, "windows", f"{wid}.json")
    led_key, next_key = monitor_key(series, "ledger.json"), monitor_key(series, "ledgers",
                                                                         f"{wid}.json")
    if st.exists(rec_key):
        rec = load_window(st, series, wid)  # this run read nothing and called no judge
        if st.exists(next_key):  # recorded, but stopped before the ledger moved: move it now
            st.write_json(led_key, st.read_json(next_key))
            st.delete(next_key)
        return rec.model_copy(update={"reused": True, "judge_calls": 0, "judge_cached": 0})
    ledger = load_ledger(st, series)
    with gc_paused():  # millions of containers, no cycles: collections would walk them all
        batch = read_new_traces(source, ledger, attrs=(None if opts.group_by == "trace"
                                                       else opts.group_by,
                                                       opts.task_attr, opts.slice_attr))
        episodes = episodes_of_traces(batch, group_by=opts.group_by, task_attr=opts.task_attr,
                                      slice_attr=opts.slice_attr, where=str(source))
    batch.traces.clear()  # the spans live on in the episodes only: freed before they are written
    c = batch.counts
    if not episodes and (c.bad_lines or c.no_model_call) and not c.pending_traces:
        raise BridgeError(f"{source!r}: nothing usable in the window: {c.bad_lines} bad lines, "
                          f"{c.no_model_call} traces without a model call, {c.files} files; "
                          "check that the source holds OTLP/JSON GenAI spans")
    idents = [judge_identity(j) for j in judges]
    slices: dict[str, dict[str, int]] = {}
    for ep in episodes:
        slices.setdefault(ep.meta["slice"], {"traces": 0, "judged": 0, "passed": 0})["traces"] += 1
    verdicts: dict[str, bool] = {}
    judge_calls: list = []
    counter = [0, 0]
    caches = {}
    if judges and episodes:
        for ident in idents:
            key = monitor_key(series, "verdicts", f"{ident[:32]}.json")
            caches[ident] = st.read_json(key) if st.exists(key) else {}
        wrapped = [_Cached(j, i, caches[i], judge_calls, counter) for j, i in zip(judges, idents)]
        for ep in _sample(episodes, opts.judge_sample, opts.seed, wid):
            d = episode_digest(ep)
            for w in wrapped:
                w.digest, w.input = d, (ep.meta or {}).get("input")
            est = estimate_quality(ep.output, wrapped, combine=opts.combine)["estimate"]
            ok = est >= 0.5 if opts.combine == "mean" else est > 0.0
            verdicts[_key(ep)] = ok
            row = slices[ep.meta["slice"]]
            row["judged"] += 1
            row["passed"] += ok
        for ident in idents:
            st.write_json(monitor_key(series, "verdicts", f"{ident[:32]}.json"), caches[ident])
    agent_table, per_ep = cost_by_model(episodes, prices)
    judge_ep = Episode("judge", cost=Cost.of_calls(judge_calls)) if judge_calls else None
    eval_table, eval_per = cost_by_model([judge_ep] if judge_ep else [], prices)
    lines = "".join(ep.to_json() + "\n" for ep in episodes).encode()
    n_priced = len(per_ep)
    mean = math.fsum(per_ep) / n_priced if n_priced else None
    var = (math.fsum((x - mean) ** 2 for x in per_ep) / (n_priced - 1) / n_priced
           if n_priced > 1 else None)
    rec = WindowRecord(
        window_id=wid, series=series, created=_dt.datetime.now(_dt.timezone.utc).isoformat(),
        source=str(source), options=opts, counts=c, episodes=len(episodes),
        episodes_digest=hashlib.sha256(lines).hexdigest(), slices=slices, verdicts=verdicts,
        judges=idents, judge_calls=counter[0], judge_cached=counter[1],
        agent_dollars=math.fsum(per_ep) if prices is not None else None,
        dollars_per_trace=mean, dollars_var=var, agent_per_model=agent_table,
        agent_tokens={k: int(sum(r[k] for r in agent_table.values()))
                      for k in ("input_tokens", "output_tokens", "cached_input_tokens")},
        evaluation_dollars=(math.fsum(eval_per) if prices is not None else None) if judges else None,
        evaluation_per_model=eval_table)
    # the ledger after this window is written first under the window's name, then the
    # window, then the ledger moves: a run stopped in between leaves either no window (the
    # traces are read again by the next run) or a window whose re-run moves the ledger, never
    # a window whose traces the next window reads again
    batch.ledger.windows.append(wid)
    st.write_json(next_key, batch.ledger.model_dump(mode="json"))
    st.write_bytes(monitor_key(series, "windows", f"{wid}.episodes.jsonl"), lines)
    st.write_json(rec_key, rec.model_dump(mode="json"))
    st.write_json(led_key, batch.ledger.model_dump(mode="json"))
    st.delete(next_key)
    return rec
