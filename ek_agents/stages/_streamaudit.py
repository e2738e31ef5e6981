"""The audit of a run stored in segments, beside :mod:`ek_agents.stages.audit`.

:func:`segment_episodes`: every trial a run's segments hold, each line checked against the
trial its index names (the per-trial audit compares them with ``episodes.json``).
:func:`audit_streamed`: a run whose report was streamed from its segments (``scalerun``,
manifest ``parameters["layout"] == STREAMED``) has no episodes or graded document; its
metrics and report are recomputed by merging the segments' digest-checked summaries, a seeded
sample of segments regraded from their bytes (every one with ``deep``).
The byte checks and the comparison are the audit's (``audit`` calls these after its
``_check_bytes`` and hands its ``differences`` in), so this module imports nothing of it.
"""
from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from typing import Any, Optional

import orjson

from ..base import RunProvenance
from ..errors import EkAgentsError
from ..store import parse_json, run_key, segment_index_prefix
from ..records.documents import check_run_doc, prices_of, results_of
from ..records.manifest import RunManifest, finite
from ..records.segments import (RunSegments, SegmentTrial, owner, read_segment, segment_line_doc,
                                stored_pair)
from .streaming import STREAMED, StreamingReport, summary_basis

__all__ = ["STREAMED", "AUDIT_SAMPLE", "segment_episodes", "audit_streamed"]


def segment_episodes(run_id: str, manifest: RunManifest, load: Any, raw: Any,
                     problems: list) -> list:
    """``(segment key + trial, episode dict)`` of every trial the run's segments hold (as
    its manifest's segment index documents say), each line checked against the trial its index
    names; the segments' bytes were checked against the manifest already (``load`` reads the
    checked bytes)."""
    segments = _segment_index(run_id, manifest, load, problems)
    if segments is None:
        return []
    out = []
    held = segments.pairs()
    for _, entry in segments.entries:
        try:
            trials = read_segment(None, entry, data=raw(entry.key))
        except (EkAgentsError, KeyError) as exc:
            problems.append(f"segment {entry.key}: {exc}")
            continue
        for t in trials:
            if held.get(t.pair) is not entry:
                continue
            named = _named_pair(t, problems)
            if named is None:
                continue
            ep, pair = named
            label = f"{entry.key} trial {t.pair!r}"
            if pair != t.pair:
                problems.append(f"{label} holds task {pair[0]!r} trial {pair[1]!r} (a misfiled "
                                "trial)")
            out.append((label, ep))
    return out


def _segment_index(run_id: str, manifest: RunManifest, load: Any,
                   problems: list) -> Optional[RunSegments]:
    """The run's segment index from the index documents its manifest lists (``load`` reads the
    checked bytes); None, the damage said in ``problems``, when one is not such a document."""
    keys = sorted(k for k in manifest.artifacts if k.startswith(segment_index_prefix(run_id) + "/"))
    try:
        return RunSegments.from_docs(None, run_id, [load(k) for k in keys])
    except (EkAgentsError, KeyError, TypeError, ValueError) as exc:
        problems.append(f"segment index of run {run_id!r} is damaged: {exc}")
        return None


def _named_pair(t: SegmentTrial, problems: list, *, fast: bool = False) -> Optional[tuple]:
    """``(the line parsed, the trial it names)``; None, said in ``problems``, when the line is
    not a stored trial. ``fast``: parsed by orjson as it is, a plain parser (no object hooks,
    ~1 us a line), only the pair read; the strict parser words the message."""
    try:
        try:
            ep = orjson.loads(t.data) if fast else segment_line_doc(t)
        except orjson.JSONDecodeError:
            ep = segment_line_doc(t)
        return ep, stored_pair(ep)
    except (EkAgentsError, AttributeError, TypeError) as exc:
        problems.append(f"{t.key} trial {t.pair!r} is not a stored trial: {exc}")
        return None


def audit_streamed(store: Any, run_id: str, manifest: RunManifest, seen: Mapping,
                   checked: list, problems: list, *, deep: bool = False,
                   compare: Callable[[Any, Any, str], list]) -> None:
    """The audit of a run streamed from its segments (``scalerun``), after every artifact's
    sha256 was checked (``seen``: the bytes read, each segment and index document included;
    ``problems`` already says what did not check out): every segment decoded, its line count
    and each line's trial checked against its index entry; the metrics and report recomputed
    by merging the segments' summaries (in the digest-checked index) -- and
    :data:`AUDIT_SAMPLE` segments, chosen by a generator seeded with the run id (every one with
    ``deep``), regraded from their bytes and compared with their summaries -- then compared
    with the recorded documents figure by figure (``compare(recorded, recomputed, what)``:
    the audit's list of differences)."""
    for name in ("tasks", "metrics", "report"):
        if run_key(run_id, name) not in manifest.artifacts:
            problems.append(f"artifact {run_key(run_id, name)} is required for this run but is "
                            "not listed in the manifest")
    if problems:
        return
    load = lambda key, name=None: (check_run_doc(name, parse_json(seen[key], key), key)  # noqa: E731
                                   if name else parse_json(seen[key], key))
    tasks = load(run_key(run_id, "tasks"), "tasks")
    prices_key = run_key(run_id, "prices")
    prices = prices_of(load(prices_key, "prices")) if prices_key in seen else None
    inputs = manifest.inputs
    segments = _segment_index(run_id, manifest, load, problems)
    if segments is None:
        return
    owners = segments.owners(inputs.k)  # bounded: a few bytes per trial
    basis = summary_basis(manifest.suite.get("digest") or "", inputs.check,
                          manifest.artifacts.get(prices_key))
    acc = StreamingReport(tasks, k=inputs.k, check=inputs.check, prices=prices,
                          seed=inputs.seed or 0, run=RunProvenance.from_dict(inputs.run or {}))
    entries = [e for _, e in segments.entries]
    sample = (set(range(len(entries))) if deep else
              set(random.Random(run_id).sample(range(len(entries)), min(AUDIT_SAMPLE, len(entries)))))
    regraded = lines = 0
    for i, entry in enumerate(entries):
        if entry.key not in seen:
            problems.append(f"segment {entry.key} is indexed but not listed in the manifest")
            continue
        try:
            trials = read_segment(None, entry, data=seen[entry.key])
        except EkAgentsError as exc:
            problems.append(f"segment {entry.key}: {exc}")
            continue
        mine = [t for t in trials if owner(owners, t.pair) == i]
        for t in mine:
            lines += 1
            named = _named_pair(t, problems, fast=True)
            if named is None:
                continue
            pair = named[1]
            if pair != t.pair:
                problems.append(f"misfiled trial: {entry.key} trial {t.pair!r} holds task "
                                f"{pair[0]!r} trial {pair[1]!r}")
        summary = entry.summary
        usable = (summary is not None and summary.get("basis") == basis and len(mine) == entry.n)
        if usable and i not in sample:
            acc.merge_state(summary)
            continue
        one = acc.empty_like()
        one.add_trials(mine)
        regraded += 1
        if usable:
            problems += compare({k: v for k, v in summary.items() if k != "basis"},
                                one.state(), f"{entry.key} summary")
        acc.merge_state(one.state())
    checked.append(f"{len(entries)} segments decoded, {lines} trials each against its index "
                   f"entry; {regraded} segments regraded from their bytes against their summaries")
    metrics, report = acc.result()
    checked.append("recomputed metrics and report")
    problems += compare(load(run_key(run_id, "metrics"), "metrics"), metrics.to_dict(), "metrics")
    problems += compare(load(run_key(run_id, "report"), "report"), report.to_dict(), "report")
    checked.append("recomputed results")
    problems += compare(manifest.results, finite(results_of(report.to_dict())), "results")


#: Segments of a streamed run the audit regrades from their bytes (the rest are merged from
#: their digest-checked summaries); ``audit(..., deep=True)`` regrades every one.
AUDIT_SAMPLE = 8
