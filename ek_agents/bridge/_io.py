"""Read a file a bridge was pointed at: a local path or any fsspec URL (``s3://``, ``memory://``...).

Bridges read a single user-named file; the artifact store (``ek_agents.store``) is for our own
outputs. Missing protocol packages raise :class:`~ek_agents.errors.MissingDependency` naming
the pip command; a missing file raises :class:`~ek_agents.errors.ArtifactNotFound`.
"""
from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from typing import IO, Any, Union

from ..errors import ArtifactNotFound, BridgeError, MissingDependency

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
    """Open ``path_or_url`` for binary reading through fsspec."""
    url = url_of(path_or_url)
    try:
        import fsspec
    except ImportError as exc:  # pragma: no cover - fsspec is a runtime dependency
        raise MissingDependency("reading logs needs fsspec: pip install fsspec") from exc
    try:
        of = fsspec.open(url, "rb")
        f = of.open()
    except FileNotFoundError as exc:
        raise ArtifactNotFound(f"no such file: {url!r} (check the path or URL)") from exc
    except IsADirectoryError as exc:
        raise BridgeError(f"{url!r} is a directory; give the log file itself") from exc
    except ImportError as exc:
        proto = url.split("://", 1)[0]
        hint = "pip install 'ek-agents[s3]'" if proto in ("s3", "s3a") else f"install the fsspec backend for {proto!r}"
        raise MissingDependency(f"reading {url!r} needs an extra package ({exc}): {hint}") from exc
    except ValueError as exc:
        raise BridgeError(f"cannot open {url!r}: {exc}") from exc
    try:
        yield f
    finally:
        f.close()


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
