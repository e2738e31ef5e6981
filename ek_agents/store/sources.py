"""Trace sources a monitor reads (a file, a folder or a glob; local or any fsspec URL), and the
keys of a monitored series in the store.

:func:`list_sources` expands a source into its files (sorted by name; a folder's files at any
depth; a glob as fsspec expands it), each with its size; :func:`read_source` reads one file's
bytes, decompressing ``.gz`` (gzip) and ``.zst`` (zstandard) by their suffix. Errors are typed:
a source naming nothing raises :class:`~ek_agents.errors.ArtifactNotFound`, a corrupt compressed
file :class:`~ek_agents.errors.InvalidInput` naming it.

A series' layout under the store root::

    monitor/<series>/ledger.json            what has been consumed (files, offsets, trace ids)
    monitor/<series>/series.json            one row per window, in order
    monitor/<series>/verdicts/<judge>.jsonl judge verdicts by episode digest (the cache)
    monitor/<series>/labels/<window>.json   a window's labels (a run document)
"""
from __future__ import annotations

import gzip
import os
import zlib
from typing import Any, NamedTuple, Union

from ..errors import ArtifactNotFound, InvalidInput
from . import open_url, read_url
from .faults import retrying
from .keys import validate_name

__all__ = ["SourceFile", "list_sources", "read_source", "monitor_key", "series_prefix",
           "COMPRESSED_SUFFIXES"]

#: Suffixes read through a decompressor.
COMPRESSED_SUFFIXES = (".gz", ".zst")


class SourceFile(NamedTuple):
    """One file of a source: its URL (or local path) and its size in bytes as stored."""

    url: str
    size: int


def _fs(source: str) -> tuple:
    # the opener every one-shot URL read uses (timeouts, retries, the [s3] extra's message)
    return open_url(source, what="trace source", invalid=InvalidInput)


def _join(source: str, fs: Any, path: str) -> str:
    if "://" not in source:
        return path
    proto = source.split("://", 1)[0]
    return f"{proto}://{fs._strip_protocol(path).lstrip('/')}" if proto == "memory" else \
        f"{proto}://{fs._strip_protocol(path)}"


def list_sources(source: Union[str, os.PathLike]) -> list[SourceFile]:
    """The files of ``source`` (a file, a folder -- every file below it --, or a glob with
    ``*``/``?``/``[``), sorted by URL, with their sizes."""
    if isinstance(source, os.PathLike):
        source = os.fspath(source)
    if not isinstance(source, str) or not source.strip():
        raise InvalidInput(f"a trace source is a file, folder or glob (path or URL), got {source!r}")
    fs, path, settings = _fs(source)
    if any(c in source.split("://", 1)[-1] for c in "*?["):
        found = retrying(fs, settings, lambda: fs.glob(path, detail=True), what=f"list {source!r}")
        infos = {p: i for p, i in found.items() if i.get("type") == "file"}
    else:
        try:
            info = retrying(fs, settings, fs.info, path, what=f"stat {source!r}")
        except FileNotFoundError:
            info = None
        if info is None:
            raise ArtifactNotFound(f"no trace source at {source!r} (check the path, folder or "
                                   "glob)")
        if info.get("type") == "directory":
            infos = retrying(fs, settings, lambda: fs.find(path, detail=True), what=f"list {source!r}")
        else:
            infos = {path: info}
    if not infos:
        raise ArtifactNotFound(f"trace source {source!r} names no file (an empty folder, or a "
                               "glob that matches nothing)")
    out = [SourceFile(_join(source, fs, p), int(i.get("size") or 0)) for p, i in infos.items()
           if not os.path.basename(p).startswith(".")]
    return sorted(out)


def read_source(url: str) -> bytes:
    """The bytes of one source file, decompressed when its name ends in ``.gz`` or ``.zst``. A
    compressed file cut short (still being written) yields what decompresses of it."""
    raw = read_url(url, what="trace file")
    if url.endswith(".gz"):
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            out = d.decompress(raw)
        except zlib.error as exc:
            raise InvalidInput(f"{url!r}: not a readable gzip file ({exc}); re-export it") from None
        if d.unused_data and raw[len(raw) - len(d.unused_data):][:2] == b"\x1f\x8b":
            out += gzip.decompress(d.unused_data)  # concatenated members (rotated appends)
        return out
    if url.endswith(".zst"):
        import zstandard  # noqa: PLC0415 -- optional codec, imported only for .zst sources

        try:
            return zstandard.ZstdDecompressor().decompressobj().decompress(raw)
        except zstandard.ZstdError as exc:
            raise InvalidInput(f"{url!r}: not a readable zstandard file ({exc}); re-export "
                               "it") from None
    return raw


def series_prefix(series: str) -> str:
    """``monitor/<series>``."""
    return f"monitor/{validate_name(series, what='series name')}"


def monitor_key(series: str, *parts: str) -> str:
    """A key under a series: ``monitor/<series>/<part>/...`` (each part a valid name)."""
    return "/".join([series_prefix(series)] + [validate_name(p, what="monitor key part")
                                               for p in parts])
