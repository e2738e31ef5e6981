"""Stored runs as data frames: one row per run, per trial, per model call, per tool call.

:func:`runs_frame`, :func:`trials_frame`, :func:`calls_frame` and :func:`steps_frame` read
stored runs (run ids in any store URL; the CLI's default store, ``$EK_STORE`` else ``./.ek``,
when ``store`` is None) through :mod:`ek_agents.report.trialdata` and return a pandas
DataFrame when pandas is installed, else (or with ``as_arrow=True``) a ``pyarrow.Table``.
Columns, their order and their types are fixed (:data:`~ek_agents.report.trialdata.TRIAL_COLUMNS`
and its siblings; :func:`schema` gives the Arrow schema of each table): strings, ``int32`` /
``int64`` counts, ``float64`` dollars and seconds, ``bool`` verdicts, nullable where the column
says so -- in pandas as the Arrow-backed dtypes ``types_mapper=pd.ArrowDtype`` gives, so a
null stays a null and an integer column stays integer.

:func:`record_batches` yields the same rows as Arrow record batches one segment (or a few
thousand trials) at a time -- what the export writes without holding a run in memory.

pyarrow and pandas are imported inside the functions that need them: ``import ek_agents``
must not pay their ~150-400 ms of import (they are the ``frames`` and ``pandas`` extras).
"""
from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from ..errors import InvalidInput, MissingDependency
from .trialdata import (CALL_COLUMNS, RUN_COLUMNS, STEP_COLUMNS, TRIAL_COLUMNS, StoredRun,
                        call_rows, open_run, run_row, step_rows, trial_row)

__all__ = ["runs_frame", "trials_frame", "calls_frame", "steps_frame", "record_batches",
           "run_batches", "schema", "TABLES"]

#: Table name -> its columns, in the order the export writes the tables.
TABLES: dict = {"runs": RUN_COLUMNS, "trials": TRIAL_COLUMNS, "calls": CALL_COLUMNS,
                "steps": STEP_COLUMNS}


#: A column type's name -> its pyarrow factory, where they differ.
_ARROW = {"bool": "bool_"}


def _pyarrow() -> Any:
    try:
        import pyarrow  # lazily: ~150 ms of import that ek_agents itself does not need
    except ImportError:
        raise MissingDependency("data frames and the export need pyarrow: pip install "
                                "'ek-agents[frames]' (and 'ek-agents[pandas]' for DataFrames)") from None
    return pyarrow


def schema(table: str) -> Any:
    """The ``pyarrow.Schema`` of ``table`` (``runs``, ``trials``, ``calls`` or ``steps``)."""
    pa = _pyarrow()
    if table not in TABLES:
        raise InvalidInput(f"no table {table!r}: the tables are {', '.join(TABLES)}")
    return pa.schema([pa.field(name, getattr(pa, _ARROW.get(kind, kind))(), nullable=True)
                      for name, kind, _ in TABLES[table]])


def _run_ids(run_ids: Any) -> list[str]:
    if isinstance(run_ids, str):
        return [run_ids]
    ids = list(run_ids or ())
    if not ids or not all(isinstance(r, str) and r for r in ids):
        raise InvalidInput(f"give one or more run ids (strings), got {run_ids!r}")
    return ids


def record_batches(run_ids: Any, *, store: Any = None,
                   tables: Sequence[str] = tuple(TABLES)) -> Iterator[tuple[str, Any]]:
    """``(table, pyarrow.RecordBatch)`` of each table in ``tables`` for the runs, in turn
    (:func:`run_batches` of each run opened)."""
    for rid in _run_ids(run_ids):
        yield from run_batches(open_run(store, rid), tables)


def run_batches(run: StoredRun, tables: Sequence[str] = tuple(TABLES)) -> Iterator[tuple[str, Any]]:
    """``(table, pyarrow.RecordBatch)`` of one opened run: its runs row first, then its trials,
    calls and steps a segment (or a few thousand trials) at a time -- never the whole run."""
    pa = _pyarrow()
    schemas = {t: schema(t) for t in tables}
    if "runs" in schemas:
        yield "runs", pa.RecordBatch.from_pylist([run_row(run)], schema=schemas["runs"])
    for rows in _rows(run, tables):
        for t, r in rows.items():
            if r and t in schemas:
                yield t, pa.RecordBatch.from_pylist(r, schema=schemas[t])


def _rows(run: StoredRun, tables: Sequence[str]) -> Iterator[dict[str, list]]:
    want_t, want_c, want_s = ("trials" in tables), ("calls" in tables), ("steps" in tables)
    for batch in run.batches():
        out: dict[str, list] = {"trials": [], "calls": [], "steps": []}
        for ep in batch:
            dollars, per_call = run.dollars(ep)
            if want_t:
                out["trials"].append(trial_row(run, ep, dollars))
            if want_c:
                out["calls"] += call_rows(run, ep, dollars, per_call)
            if want_s:
                out["steps"] += step_rows(run, ep)
        yield out


def _frame(table: str, run_ids: Any, store: Any, as_arrow: bool) -> Any:
    pa = _pyarrow()
    batches = [b for _, b in record_batches(run_ids, store=store, tables=(table,))]
    tab = pa.Table.from_batches(batches, schema=schema(table))
    if as_arrow:
        return tab
    try:
        import pandas as pd  # lazily, as pyarrow above (the `pandas` extra)
    except ImportError:
        return tab
    return tab.to_pandas(types_mapper=pd.ArrowDtype)


def runs_frame(run_ids: Any, *, store: Any = None, as_arrow: bool = False) -> Any:
    """One row per run (:data:`~ek_agents.report.trialdata.RUN_COLUMNS`): agent, model, suite,
    provenance, k, tasks, trials, successes, success rate, dollars, cost per success, where
    its trials are stored and its manifest's sha256."""
    return _frame("runs", run_ids, store, as_arrow)


def trials_frame(run_ids: Any, *, store: Any = None, as_arrow: bool = False) -> Any:
    """One row per trial (:data:`~ek_agents.report.trialdata.TRIAL_COLUMNS`): task, slice,
    trial, success, judge verdict and label, error and limit hit, model, dollars, tokens by
    kind, latency, steps and model calls, output."""
    return _frame("trials", run_ids, store, as_arrow)


def calls_frame(run_ids: Any, *, store: Any = None, as_arrow: bool = False) -> Any:
    """One row per model call (:data:`~ek_agents.report.trialdata.CALL_COLUMNS`): the model
    that answered, tokens by kind, dollars; a trial whose usage is one tally is one row
    (``per_call`` false) billed at its model, as the report bills it."""
    return _frame("calls", run_ids, store, as_arrow)


def steps_frame(run_ids: Any, *, store: Any = None, as_arrow: bool = False) -> Any:
    """One row per tool call (:data:`~ek_agents.report.trialdata.STEP_COLUMNS`): tool,
    arguments and observation as JSON text, error."""
    return _frame("steps", run_ids, store, as_arrow)
