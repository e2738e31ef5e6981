"""A run's stored trials as tests read them: what its segments hold, and per-trial
episode files as earlier versions of the harness stored a run's trials: one object
per trial at ``store.episode_key(run_id, task_id, trial)`` holding the canonical JSON of its
``Episode.to_dict()``. The harness writes segments only; these tests still read, resume and
audit runs stored this way, made here from a run's segments."""
from __future__ import annotations

from ek_agents.records.segments import RunSegments, iter_segments
from ek_agents.store import Store, episode_key


def to_per_trial_files(st: Store, run_id: str) -> int:
    """Rewrite run ``run_id``'s indexed trials as per-trial files (the same bytes each) and
    remove its segments and segment index; how many trials were rewritten."""
    segments = RunSegments.load(st, run_id)
    n = 0
    for batch in iter_segments(st, segments):
        for t in batch:
            st.write_bytes(episode_key(run_id, t.pair[0], t.pair[1]), t.data)
            n += 1
    segments.remove_all()
    return n


def held_lines(st: Store, run_id: str) -> dict[tuple, bytes]:
    """The trials run ``run_id``'s segments hold, ``{(task_id, trial): its line}`` (each the
    canonical JSON of the trial's ``Episode.to_dict()``)."""
    return {t.pair: t.data for batch in iter_segments(st, RunSegments.load(st, run_id))
            for t in batch}
