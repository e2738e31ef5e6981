"""Stored runs exported as files: Parquet, CSV or JSON Lines, one file per table.

:func:`export_runs` writes ``runs``, ``trials``, ``calls`` and ``steps`` (the tables of
:mod:`ek_agents.report.frames`) into a folder, streaming: each run's trials are read a segment
(or a few thousand trials) at a time and written as they come (a Parquet row group, CSV rows or
JSON lines per batch), so a run of a million trials exports in memory bounded by a segment, not
by the run. Beside the tables it writes ``export.json``: per run the sha256 of its manifest and
the sha256 the manifest lists for each document and segment index the rows were read from, and
per file written its sha256 and row count. :func:`verify_export` checks an export against its
runs: every file's bytes against ``export.json``, every run's manifest and listed digests
against the store as it is now -- a file edited after the export, or a run changed since, is
named.

pyarrow is imported inside the functions that need it (the ``frames`` extra), as in
:mod:`ek_agents.report.frames`.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Union

from pydantic import Field

from ..base import JsonShape
from ..core import shape
from ..errors import ArtifactNotFound, AuditFailed, InvalidInput
from ..records import documents
from ..store import open_store, run_key
from .frames import TABLES, run_batches, schema
from .trialdata import open_run

__all__ = ["export_runs", "verify_export", "ExportRecord", "ExportedFile", "ExportedRun",
           "EXPORT_FILE", "FORMATS"]

#: The record an export writes beside its tables.
EXPORT_FILE = "export.json"
#: Format -> the tables' file extension.
FORMATS = {"parquet": "parquet", "csv": "csv", "jsonl": "jsonl"}


@shape()
class ExportedRun(JsonShape):
    """One exported run: its manifest's sha256 and the digests (as the manifest lists them) of
    what its rows were read from."""

    run_id: str
    manifest_sha256: str
    layout: str
    artifacts: dict[str, str] = Field(default_factory=dict)


@shape()
class ExportedFile(JsonShape):
    """One file an export wrote: its sha256 and its rows."""

    sha256: str
    rows: int


@shape()
class ExportRecord(JsonShape):
    """``export.json``: what was exported, from where, into which files."""

    schema_version: int = 1
    format: str = "parquet"
    store: str = ""
    runs: list[ExportedRun] = Field(default_factory=list)
    files: dict[str, ExportedFile] = Field(default_factory=dict)


class _Writer:
    """One table's file, written batch by batch in the chosen format."""

    def __init__(self, path: Path, fmt: str, table: str) -> None:
        self.path, self.fmt, self.rows = path, fmt, 0
        sch = schema(table)
        if fmt == "parquet":
            import pyarrow.parquet as pq  # lazily: the frames extra

            self.w: Any = pq.ParquetWriter(str(path), sch, compression="zstd")
        elif fmt == "csv":
            import pyarrow.csv as pacsv  # lazily: the frames extra

            self.w = pacsv.CSVWriter(str(path), sch)
        else:
            self.w = open(path, "w", encoding="utf-8", newline="\n")

    def write(self, batch: Any) -> None:
        self.rows += batch.num_rows
        if self.fmt == "jsonl":
            self.w.write("".join(json.dumps(_finite(r), ensure_ascii=False) + "\n"
                                 for r in batch.to_pylist()))
        else:
            self.w.write_batch(batch)

    def close(self) -> None:
        self.w.close()


def _finite(row: dict) -> dict:
    """A JSON-safe row: a non-finite float as the string the run documents use."""
    return {k: (("Infinity" if v > 0 else "-Infinity") if math.isinf(v) else "NaN")
            if isinstance(v, float) and not math.isfinite(v) else v for k, v in row.items()}


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _out_dir(out: Union[str, os.PathLike]) -> Path:
    text = os.fspath(out)
    if "://" in text and not text.startswith("file://"):
        raise InvalidInput(f"export --out {text!r}: give a local folder (the tables are written "
                           "as files there); copy the folder to remote storage afterwards")
    return Path(text[len("file://"):] if text.startswith("file://") else text)


def export_runs(run_ids: Sequence[str], out: Union[str, os.PathLike], *, fmt: str = "parquet",
                store: Any = None) -> ExportRecord:
    """Export stored runs into folder ``out`` (created when missing): ``runs``, ``trials``,
    ``calls`` and ``steps`` with ``fmt``'s extension, and ``export.json``
    (:class:`ExportRecord`). ``store``: a Store or URL (None: ``$EK_STORE``, else ``./.ek``)."""
    if fmt not in FORMATS:
        raise InvalidInput(f"export format {fmt!r}: choose one of {', '.join(FORMATS)}")
    if isinstance(run_ids, str) or not run_ids:
        raise InvalidInput(f"export needs one or more run ids, got {run_ids!r}")
    st = open_store(store)
    folder = _out_dir(out)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / EXPORT_FILE).unlink(missing_ok=True)  # written last: a failed export has none
    paths = {t: folder / f"{t}.{FORMATS[fmt]}" for t in TABLES}
    writers = {t: _Writer(p, fmt, t) for t, p in paths.items()}
    record = ExportRecord(format=fmt, store=st.url)
    try:
        for rid in run_ids:
            run = open_run(st, rid)
            for table, batch in run_batches(run):
                writers[table].write(batch)
            record.runs.append(ExportedRun(run_id=rid, manifest_sha256=run.manifest_sha256,
                                           layout=run.layout, artifacts=dict(sorted(run.read.items()))))
    finally:
        for w in writers.values():
            w.close()
    for t, p in paths.items():
        record.files[p.name] = ExportedFile(sha256=_sha256_file(p), rows=writers[t].rows)
    (folder / EXPORT_FILE).write_text(json.dumps(record.to_dict(), indent=2, sort_keys=True) + "\n",
                                      encoding="utf-8")
    return record


def verify_export(out: Union[str, os.PathLike], *, store: Any = None) -> list[str]:
    """Check the export in folder ``out`` against its runs: each file's sha256 against
    ``export.json``, each run's manifest (its sha256 now) and the digests it lists for what
    was exported; returns what was checked, one line each. Raises
    :class:`~ek_agents.errors.AuditFailed` naming every difference. ``store``: where the runs
    are (None: the store ``export.json`` names)."""
    folder = _out_dir(out)
    try:
        record = ExportRecord.from_dict(json.loads((folder / EXPORT_FILE).read_text(encoding="utf-8")))
    except FileNotFoundError:
        raise InvalidInput(f"{folder / EXPORT_FILE} does not exist: {str(out)!r} is not an "
                           "export (ek-agents export RUN --out DIR writes one)") from None
    except (ValueError, InvalidInput) as exc:
        raise AuditFailed(f"{folder / EXPORT_FILE} is malformed ({exc}); export the runs again") from None
    problems, checked = [], []
    for name, f in sorted(record.files.items()):
        path = folder / name
        actual = _sha256_file(path) if path.exists() else None
        if actual is None:
            problems.append(f"{name}: missing from {folder}")
        elif actual != f.sha256:
            problems.append(f"{name}: sha256 {actual[:12]}..., export.json records "
                            f"{f.sha256[:12]}... (changed after the export)")
        else:
            checked.append(f"{name}: sha256 {f.sha256[:12]}... ({f.rows:,} rows)")
    st = open_store(store if store is not None else record.store)
    for run in record.runs:
        rid = run.run_id
        try:
            now = st.digest(run_key(rid, "manifest"))
        except ArtifactNotFound:
            problems.append(f"run {rid!r}: no manifest in store {st.url!r} any more")
            continue
        if now != run.manifest_sha256:
            problems.append(f"run {rid!r}: its manifest now has sha256 {now[:12]}..., the export "
                            f"was made from {run.manifest_sha256[:12]}... (the run changed since)")
            continue
        listed = documents.read_manifest(st, rid).artifacts
        off = [k for k, sha in run.artifacts.items() if listed.get(k) != sha]
        if off:
            problems.append(f"run {rid!r}: {', '.join(off)} differ from its manifest's digests")
        else:
            checked.append(f"run {rid!r}: manifest {now[:12]}... and {len(run.artifacts)} "
                           "documents as exported")
    if problems:
        raise AuditFailed(f"export {folder} does not match its runs: " + "; ".join(problems))
    return checked

