"""Read a file a bridge was pointed at: a local path or any fsspec URL (``s3://``, ``memory://``...).

Bytes come through :func:`ek_agents.store.read_url`, the one reader of user-named files:
missing protocol packages raise :class:`~ek_agents.errors.MissingDependency` naming the pip
command; a missing file raises :class:`~ek_agents.errors.ArtifactNotFound`.
"""
from __future__ import annotations

import contextlib
import gc
import os
from collections.abc import Iterator
from typing import Any

from ..errors import BridgeError
from ..parsing import decode_text, parse_json
from ..store import read_url


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """The cyclic garbage collector paused while a reader parses a log and builds its episodes.

    Both make millions of containers and no reference cycles: every collection the allocations
    would trigger walks the whole parsed log for nothing (more than half of a 50 MB Inspect
    log's ingest time, measured). Reference counting still frees what is dropped. When the
    reader returns or raises, the collector is switched back on (if it was on) with what
    survived moved straight to the oldest generation (``gc.freeze()`` + ``gc.unfreeze()``):
    the episodes are long-lived, and the young collection the next allocation would trigger
    would otherwise walk all of them at once (a fifth of a tau-bench ingest, measured). Full
    collections still see everything.
    """
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.freeze()
            gc.unfreeze()
            gc.enable()


def url_of(path_or_url: Any) -> str:
    """The string form of a path or URL (``BridgeError`` for anything else)."""
    if isinstance(path_or_url, os.PathLike):
        return os.fspath(path_or_url)
    if isinstance(path_or_url, str) and path_or_url:
        return path_or_url
    raise BridgeError(f"expected a file path or URL (str or pathlib.Path), got {path_or_url!r}")


def read_bytes(path_or_url: Any) -> bytes:
    """All bytes at ``path_or_url`` (through :func:`ek_agents.store.read_url`)."""
    return read_url(url_of(path_or_url), what="log", invalid=BridgeError)


def loads(data: bytes, where: str, what: str = "valid JSON") -> Any:
    """Parse JSON ``data`` (``where`` names its file or member in errors), bounded by
    :func:`ek_agents.parsing.parse_json`; the ``NaN``/``Infinity`` tokens Python's ``json``
    writes are accepted (the logs of other tools hold them)."""
    return parse_json(data, where=f"{where} ({what})", error=BridgeError, nonfinite="allow")


def read_json(path_or_url: Any, what: str) -> Any:
    """Parse the JSON document at ``path_or_url`` (``what`` names it in errors)."""
    return loads(read_bytes(path_or_url), repr(url_of(path_or_url)), f"a JSON {what}")


def read_lines(path_or_url: Any) -> list[str]:
    """The lines of the UTF-8 text file at ``path_or_url``."""
    return decode_text(read_bytes(path_or_url), where=repr(url_of(path_or_url)),
                       error=BridgeError).splitlines()
