"""Production monitoring without gold: trace files in, windows judged and label-corrected, a
series with an alert.

- :mod:`.ingest` -- incremental reading of OTLP/JSON files against a ledger (file identity and
  offsets, trace ids), episodes from complete traces (grouped, tasks, slices); its blocks of
  lines read by :mod:`.blocks` (partly in a worker process), its episodes made by
  :mod:`.traceepisodes`;
- :mod:`.window` -- one window: its episodes stored as they come (the window is a run: its
  segments and documents, ``stages.windowrun``), judged (a sample stratified by slice; verdicts
  cached by episode digest and judge identity), the agent and -- apart -- the judges billed;
- :mod:`.series` -- labels per window, each window's corrected rate and the alert.

May import everything below ``runs`` and ``runs`` itself (see ``ek_agents.layers``).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_exports

_EXPORTS: dict[str, str] = {
    **dict.fromkeys(["FileMark", "Ledger", "IngestCounts", "TraceBatch", "read_new_traces",
                     "episodes_of_traces", "iter_new_episodes", "EpisodeStream"], "ingest"),
    "DEFAULT_SLICE": "traceepisodes",
    **dict.fromkeys(["WindowOptions", "WindowRecord", "run_window", "load_ledger", "load_window",
                     "window_episodes", "iter_window_episodes", "episode_digest",
                     "judge_identity", "new_window_id", "new_episodes",
                     "window_manifest", "WINDOW_SOURCE"],
                    "window"),
    **dict.fromkeys(["SeriesOptions", "SeriesRow", "evaluate_series", "store_window_labels",
                     "window_labels", "window_sentence", "plan_window_labels", "window_report",
                     "monitor_window", "run_monitor", "window_markdown"], "series"),
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())

if TYPE_CHECKING:
    from .traceepisodes import DEFAULT_SLICE as DEFAULT_SLICE
    from .ingest import (EpisodeStream as EpisodeStream,
                         FileMark as FileMark, iter_new_episodes as iter_new_episodes,
                         IngestCounts as IngestCounts, Ledger as Ledger,
                         TraceBatch as TraceBatch, episodes_of_traces as episodes_of_traces,
                         read_new_traces as read_new_traces)
    from .series import (SeriesOptions as SeriesOptions, SeriesRow as SeriesRow,
                         evaluate_series as evaluate_series, monitor_window as monitor_window,
                         plan_window_labels as plan_window_labels, run_monitor as run_monitor,
                         store_window_labels as store_window_labels,
                         window_labels as window_labels, window_markdown as window_markdown,
                         window_report as window_report, window_sentence as window_sentence)
    from .window import (WINDOW_SOURCE as WINDOW_SOURCE,
                         WindowOptions as WindowOptions, WindowRecord as WindowRecord,
                         episode_digest as episode_digest,
                         iter_window_episodes as iter_window_episodes,
                         new_episodes as new_episodes, window_manifest as window_manifest,
                         judge_identity as judge_identity, load_ledger as load_ledger,
                         load_window as load_window, new_window_id as new_window_id,
                         run_window as run_window, window_episodes as window_episodes)
