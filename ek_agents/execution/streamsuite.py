"""A persisted ``run_suite``'s report streamed from its segments, never holding its episodes.

When every input of the report can be stored and recomputed -- ``check`` a checker's name or
None, no custom ``metrics``, no single ``price``, no ``labels`` -- ``harness.run_suite`` runs
the trials without keeping them (the trial runner's ``keep=False``): each segment is graded
and summed as its writer stores it (``streaming.segment_summarizer``, its summary tagged with
``streaming.summary_basis`` of the suite, checker and price catalog), and the report is those
summaries merged (``streaming.merged_report``: a segment without a usable summary, e.g. one
an earlier attempt of the run stored, is read and graded then). Memory is bounded by the
per-task state and the open segment, whatever the number of trials. The run is recorded as a
scale run is (``streaming.STREAMED`` layout: no whole-run episodes or graded document; the
audit recomputes it from the segments, the trial browser and the labels read the segments).

``StreamingReport`` does not count trials a provider error left unresolved nor the attempts
it ended (``scoring.unresolved``), nor break the cost down by the model calls a trial records
(``cost["per_model"]``) or say what captured spans left out of the bill (``meta["otel"]``);
a run that has any such trial (a stored line marked so: seen by the byte scan of
:meth:`StreamedSuite.summarize`, or among the trials a resume loaded) is reported the
in-memory way (``StreamedSuite.marked``), from the trials already stored.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Optional

from ..base import RunProvenance
from ..records.documents import prices_doc
from ..records.stagecache import doc_bytes
from ..scoring.unresolved import PROVIDER, is_unresolved
from ..stages.streaming import STREAMED, merged_report, segment_summarizer, summary_basis
from ..store import sha256_hex

__all__ = ["streamable", "StreamedSuite", "STREAMED"]

# canonical JSON of a stored episode (sorted keys, no spaces): what marks a trial that a
# provider error ended or retried, one whose cost lists its model calls, one with captured
# spans (a false hit only sends the run down the in-memory path)
_MARKS = (b'"error_kind":"' + PROVIDER.encode() + b'"', b'"provider_retries":', b'"calls":[{',
          b'"otel":{')


def streamable(*, check: Any, metrics: Optional[Mapping], price: Any, labels: Any) -> bool:
    """True when a persisted run's report can be streamed from its segments: every input of
    it is one the run stores and the streamed report recomputes."""
    return (check is None or isinstance(check, str)) and not metrics and price is None \
        and labels is None


class StreamedSuite:
    """One persisted run's streamed report: the segment summarizer its writer calls, and the
    merge at the end (see the module docstring). ``tasks_doc``: the run's tasks document (as
    stored: what the audit grades with)."""

    def __init__(self, tasks_doc: Mapping, *, k: int, check: Optional[str],
                 prices: Optional[Mapping], seed: int, run: Optional[RunProvenance]) -> None:
        self.tasks_doc, self.k, self.check, self.prices = tasks_doc, k, check, prices
        self.seed, self.run = seed, run
        prices_sha = None if prices is None else sha256_hex(doc_bytes(prices_doc(prices)))
        self.basis = summary_basis(tasks_doc["digest"], check, prices_sha)
        self._summarize = segment_summarizer(tasks_doc, k=k, check=check, prices=prices,
                                             seed=seed, run=run)
        self.marked = False  # a trial a provider error ended or retried is stored

    def summarize(self, pairs: list, lines: list, episodes: list) -> dict:
        """A segment's summary (``segments.SegmentWriter``'s ``summarize``), with its basis."""
        if not self.marked and any(m in line for line in lines for m in _MARKS):
            self.marked = True
        return {**self._summarize(pairs, lines, episodes), "basis": self.basis}

    def note_loaded(self, episodes: Iterable[Any]) -> bool:
        """Look at the trials a resume loaded from the store for provider marks; return
        :attr:`marked` (True: report the run the in-memory way)."""
        if not self.marked:
            self.marked = any(is_unresolved(e) or "provider_retries" in (e.meta or {})
                              or "otel" in (e.meta or {}) or (e.cost is not None and e.cost.calls)
                              for e in episodes)
        return self.marked

    def report(self, store: Any, run_id: str) -> tuple[Any, Any, int]:
        """``(metrics, report, trials)`` of the run's segments, their summaries merged."""
        metrics, report, counts = merged_report(store, run_id, self.tasks_doc, k=self.k,
                                                check=self.check, prices=self.prices,
                                                seed=self.seed, run=self.run, basis=self.basis)
        return metrics, report, counts["trials"]
