"""Read a file a bridge was pointed at: a local path or any fsspec URL (``s3://``, ``memory://``...).

Bytes come through :func:`ek_agents.store.read_url`, the one reader of user-named files:
missing protocol packages raise :class:`~ek_agents.errors.MissingDependency` naming the pip
command; a missing file raises :class:`~ek_agents.errors.ArtifactNotFound`.
"""
from __future__ import annotations

import contextlib
import io
import json
import os
from collections.abc import Iterator
from typing import IO, Any, Union

from ..errors import BridgeError

PathLike = Union[str, "os.PathLike[str]"]


def url_of(path_or_url: Any) -> str:
    """The string form of a path or URL (``BridgeError`` for anything else)."""
    if isinstance(path_or_url, os.PathLike):
        return os.fspath(path_or_url)
    if isinstance(path_or_url, str) and path_or_url:
        return path_or_url
    raise BridgeError(f"expected a file path or URL (str or pathlib.Path), got {path_or_url!r}")


@contextlib.contextmanager
def open_binary(path_or_url: Any) -> Iterator[IO[bytes]]:
    """``path_or_url`` as a binary file object (read through :func:`ek_agents.store.read_url`)."""
    from ..store import read_url

    yield io.BytesIO(read_url(url_of(path_or_url), what="log", invalid=BridgeError))


def read_json(path_or_url: Any, what: str) -> Any:
    """Parse the JSON document at ``path_or_url`` (``what`` names it in errors)."""
    with open_binary(path_or_url) as f:
        data = f.read()
    try:
        return json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise BridgeError(f"{url_of(path_or_url)!r} is not a JSON {what}: {exc}") from exc


def read_lines(path_or_url: Any) -> list[str]:
    """The lines of the UTF-8 text file at ``path_or_url``."""
    with open_binary(path_or_url) as f:
        data = f.read()
    try:
        return data.decode("utf-8").splitlines()
    except UnicodeDecodeError as exc:
        raise BridgeError(f"{url_of(path_or_url)!r} is not UTF-8 text: {exc}") from exc
