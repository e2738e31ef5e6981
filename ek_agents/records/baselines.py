"""Baselines by name: freezing a run's report as a named baseline, loading it, promoting a
stored run, and the library's regression gate against a named baseline.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, Optional, Union

from ..base import RunProvenance
from ..errors import BaselineError, IntegrityError
from ..gate import AgentGateResult, as_report, as_run, regression_gate
from ..reporting import ReliabilityReport
from ..store import Store, baseline_key, open_store, parse_json, run_key, sha256_hex
from .documents import run_report
from .manifest import check_baseline, utc_now

__all__ = ["BASELINE_KIND", "save_agent_baseline", "baseline_document", "load_agent_baseline",
           "stored_baseline", "agent_regression_gate", "load_baseline", "promote",
           "promote_baseline", "no_baseline"]

#: ``kind`` tag of a stored baseline document.
BASELINE_KIND = "ek-agents/agent-baseline"


# --------------------------------------------------------------------------- baselines by name

def save_agent_baseline(report: Any, name: str, *, rootdir: Union[Store, str, None] = None,
                        run: Optional[RunProvenance] = None,
                        replaced: Optional[Mapping] = None) -> dict:
    """Freeze a run as a named baseline (including its provenance, so the gate can guard it).

    Writes ``store.baseline_key(name)`` to the store at ``rootdir`` (any Store URL; default
    ``EK_STORE`` or ``./.ek``) and returns the stored document ``{"kind", "name", "created",
    "report", "run"}``. ``run`` defaults to the provenance recorded in
    ``report.detail["run"]``. Raises :class:`~ek_agents.errors.BaselineError` (a ValueError)
    when the run evaluated nothing: an empty baseline would be a permanent free pass.
    ``replaced`` (set by :func:`promote`) records the baseline this one overwrote.
    """
    Store.validate_name(name, what="baseline name")
    doc = baseline_document(report, name, run=run)
    if replaced is not None:
        doc["replaced"] = dict(replaced)
    open_store(rootdir).save_baseline(name, doc)
    return doc


def baseline_document(report: Any, name: str, *, run: Optional[RunProvenance] = None) -> dict:
    """The baseline document of ``report`` (what :func:`save_agent_baseline` stores, and what a
    run records as the baseline its gate used): ``{"kind", "name", "created", "report", "run"}``.
    Raises :class:`~ek_agents.errors.BaselineError` for a report of 0 trials."""
    rep = as_report(report, "save_agent_baseline: report")
    if rep.n_trials <= 0:
        raise BaselineError(
            f"save_agent_baseline({name!r}): the report evaluated nothing (0 trials); an empty "
            "baseline is a permanent free pass -- run the suite first")
    prov = as_run(run if run is not None else rep.detail.get("run"), "save_agent_baseline")
    return {"schema_version": 1, "kind": BASELINE_KIND, "name": name, "created": utc_now(),
            "report": rep.to_dict(), "run": None if prov is None else prov.to_dict()}


def load_agent_baseline(name: str, *, rootdir: Union[Store, str, None] = None) -> Optional[dict]:
    """Load a named agent baseline (or ``None`` when there is none); a malformed one is a
    BaselineError naming the field (``manifest.check_baseline``)."""
    return stored_baseline(open_store(rootdir), name)


def no_baseline(store: Any, name: str) -> BaselineError:
    """The error for a baseline ``name`` that ``store`` does not hold, saying how to make one."""
    return BaselineError(f"no baseline named {name!r} in store {store.url!r}: save one with "
                         f"save_agent_baseline(report, {name!r}), or promote a stored run "
                         f"(ek-agents promote RUN_ID --name {name})")


def stored_baseline(store: Any, name: str) -> Optional[dict]:
    """The stored baseline ``name``, validated; None when there is none."""
    doc = store.load_baseline(name)
    if doc is not None:
        check_baseline(doc, baseline_key(name))
    return doc



def agent_regression_gate(report: Any, baseline: Any, *, tolerance: float = 0.0,
                          cost_tolerance: float = 0.0,
                          rootdir: Union[Store, str, None] = None,
                          paired: Optional[bool] = None) -> AgentGateResult:
    """Fail only when the evidence says the agent **really** got worse -- not on noise.

    ``baseline`` is a name (loaded from the store at ``rootdir``), the dict
    :func:`save_agent_baseline` / :func:`load_agent_baseline` return, or a report; the
    verdict is :func:`ek_agents.gate.regression_gate`'s (see :mod:`ek_agents.gate` for the
    rules). ``tolerance`` is in success-rate / pass^k units (0.02 = 2 points);
    ``cost_tolerance`` a relative increase of cost per success (0.1 = 10%); ``paired``: ``None``
    pairs the tests when both runs cover the same tasks, ``False`` forces the unpaired ones,
    ``True`` requires pairing.

    Raises :class:`~ek_agents.errors.IncomparableRuns` (a ValueError) when the simulator, suite
    version or scaffold differ, and :class:`~ek_agents.errors.BaselineError` (a ValueError)
    when the baseline does not exist, recorded zero trials or is malformed.
    """
    label = "the baseline"
    if isinstance(baseline, str):
        label = f"baseline {baseline!r}"
        st = open_store(rootdir)
        doc = stored_baseline(st, baseline)
        if doc is None:
            raise no_baseline(st, baseline)
        baseline = doc
    return regression_gate(report, baseline, tolerance=tolerance, cost_tolerance=cost_tolerance,
                           label=label, paired=paired)


def load_baseline(store: Any, name: str) -> dict:
    """The stored baseline ``name``, validated (BaselineError naming the field when it is
    malformed, or saying how to make one when there is none)."""
    doc = stored_baseline(store, name)
    if doc is None:
        raise no_baseline(store, name)
    return doc



def promote(store: Any, run_id: str, name: str, *, replace: bool = False) -> dict:
    """Make run ``run_id`` the baseline ``name`` (:func:`save_agent_baseline`).

    The run's report is a verified read (:func:`run_report`: a report.json edited after the
    run is refused with DigestMismatch). The baseline's report records ``detail["run_id"]``
    and ``detail["manifest_sha256"]``, so an audit of the baseline finds, and re-checks, the
    run it came from. An existing baseline ``name`` is refused (BaselineError) unless
    ``replace``; then the replaced document is kept as a content-addressed artifact and the
    new baseline records it under ``replaced`` (``{"artifact", "run_id", "created"}``).
    """
    Store.validate_name(name, what="baseline name")
    manifest, report = run_report(store, run_id)
    replaced = None
    if store.exists(baseline_key(name)):
        old = _previous_baseline(store, name)
        if not replace:
            raise BaselineError(
                f"baseline {name!r} already exists in store {store.url!r} (promoted from run "
                f"{old.get('run_id')!r}, {old.get('created') or 'date unknown'}): refusing to "
                f"overwrite it; pass --replace (promote(..., replace=True)) to replace it -- the "
                "replaced baseline is kept as an artifact")
        replaced = old
    rep = ReliabilityReport.from_dict(report)
    linked = dataclasses.replace(rep, detail={**rep.detail, "run_id": run_id, "manifest_sha256":
                                              store.digest(run_key(run_id, "manifest"))})
    return save_agent_baseline(linked, name, rootdir=store,
                               run=RunProvenance.from_dict(manifest["provenance"]),
                               replaced=replaced)


def _previous_baseline(store: Any, name: str) -> dict:
    """What a replacing promote records of the baseline it overwrites: its bytes kept as an
    artifact (``store.get_artifact(artifact)`` reads them back), its run and date."""
    data = store.read_bytes(baseline_key(name))
    try:
        doc = parse_json(data, baseline_key(name))
    except IntegrityError:  # unreadable: keep its digest, nothing else can be said
        return {"artifact": None, "sha256": sha256_hex(data), "run_id": None, "created": None}
    report = doc.get("report") if isinstance(doc, Mapping) else None
    detail = report.get("detail") if isinstance(report, Mapping) else None
    return {"artifact": store.put_artifact(doc), "sha256": sha256_hex(data),
            "run_id": detail.get("run_id") if isinstance(detail, Mapping) else None,
            "created": doc.get("created") if isinstance(doc, Mapping) else None}



def promote_baseline(store: Any, run_id: str, name: str, replace: bool = False) -> dict:
    """:func:`promote`, summarised: ``{"baseline", "key", "run_id", "created", "replaced"}``."""
    doc = promote(store, run_id, name, replace=replace)
    return {"baseline": name, "key": baseline_key(name), "run_id": run_id,
            "created": doc.get("created"), "replaced": doc.get("replaced")}
