"""Trace sources a monitor reads (a file, a folder or a glob; local or any fsspec URL), and the
keys of a monitored series in the store.

:func:`list_sources` expands a source into its files (sorted by name; a folder's files at any
depth; a glob as fsspec expands it), each with its size; :func:`iter_source` reads one file's
bytes a block at a time (from an offset: a plain file is seeked, a compressed one decompressed
and skipped), decompressing ``.gz`` (gzip, concatenated members too) and ``.zst`` (zstandard)
by their suffix as it goes, so a reader never holds more than a block of a big file;
:func:`read_source` joins them. Errors are typed:
a source naming nothing raises :class:`~ek_agents.errors.ArtifactNotFound`, a corrupt compressed
file :class:`~ek_agents.errors.InvalidInput` naming it.

A series' layout under the store root::

    monitor/<series>/ledger.json            what has been consumed (files, offsets, trace ids)
    monitor/<series>/series.json            one row per window, in order
    monitor/<series>/verdicts/<judge>.jsonl judge verdicts by episode digest (the cache)
    monitor/<series>/labels/<window>.json   a window's labels (a run document)
"""
from __future__ import annotations

import os
import zlib
from collections.abc import Iterator
from typing import Any, NamedTuple, Optional, Union

from ..errors import ArtifactNotFound, InvalidInput
from . import open_url, read_url
from .faults import retrying
from .keys import validate_name

__all__ = ["SourceFile", "list_sources", "read_source", "iter_source", "monitor_key",
           "series_prefix", "COMPRESSED_SUFFIXES", "SOURCE_BLOCK"]

#: Suffixes read through a decompressor.
COMPRESSED_SUFFIXES = (".gz", ".zst")
#: Bytes read (and, compressed, decompressed) per block of :func:`iter_source`.
SOURCE_BLOCK = 8 << 20


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
    return b"".join(iter_source(url))


def iter_source(url: str, start: int = 0, *, block: Optional[int] = None) -> Iterator[bytes]:
    """The (decompressed) bytes of one source file from offset ``start`` on, about ``block``
    bytes at a time: what :func:`read_source` returns from ``start``, never all of it at once.
    A compressed file cut short (still being written) yields what decompresses of it; a
    corrupt one raises :class:`~ek_agents.errors.InvalidInput` naming it."""
    block = block or SOURCE_BLOCK
    fs, path, settings = _fs(url)
    try:
        f = retrying(fs, settings, fs.open, path, "rb", what=f"open trace file {url!r}")
    except FileNotFoundError:
        raise ArtifactNotFound(f"no such trace file: {url!r} (check the path or URL)") from None
    with f:
        if not url.endswith(COMPRESSED_SUFFIXES):
            if start:
                f.seek(start)
            yield from iter(lambda: f.read(block), b"")
            return
        skip = start
        for out in _decompressed(url, iter(lambda: f.read(block), b"")):
            if skip >= len(out):
                skip -= len(out)
                continue
            yield out[skip:] if skip else out
            skip = 0


def _decompressed(url: str, raw: Iterator[bytes]) -> Iterator[bytes]:
    gz = url.endswith(".gz")
    if gz:
        codec, error = "gzip", zlib.error

        def new() -> Any:
            return zlib.decompressobj(16 + zlib.MAX_WBITS)
    else:
        import zstandard  # noqa: PLC0415 -- optional codec, imported only for .zst sources

        codec, error = "zstandard", zstandard.ZstdError

        def new() -> Any:
            return zstandard.ZstdDecompressor().decompressobj()
    d = new()
    for chunk in raw:
        while chunk:
            try:
                out = d.decompress(chunk)
            except error as exc:
                raise InvalidInput(f"{url!r}: not a readable {codec} file ({exc}); re-export "
                                   "it") from None
            if out:
                yield out
            chunk = b""
            if gz and d.eof and d.unused_data[:2] == b"\x1f\x8b":  # concatenated members
                d, chunk = new(), d.unused_data  # (rotated appends): the next one


def series_prefix(series: str) -> str:
    """``monitor/<series>``."""
    return f"monitor/{validate_name(series, what='series name')}"


def monitor_key(series: str, *parts: str) -> str:
    """A key under a series: ``monitor/<series>/<part>/...`` (each part a valid name)."""
    return "/".join([series_prefix(series)] + [validate_name(p, what="monitor key part")
                                               for p in parts])
