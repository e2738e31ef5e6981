"""The artifact store: the one module of ek-agents that touches fsspec.

A :class:`Store` is a folder of JSON artifacts behind any fsspec URL -- a local path,
``file://``, ``memory://`` or ``s3://`` (S3 needs ``pip install 'ek-agents[s3]'``; endpoint and
credentials come from the environment -- ``AWS_ENDPOINT_URL``, ``AWS_ACCESS_KEY_ID``, ... --
and are never written to the store). Layout under the root::

    artifacts/<sha256>.json                     content-addressed JSON (put_artifact)
    runs/<run_id>/manifest.json                 a run's manifest (write_manifest)
    runs/<run_id>/episodes/<task>/<trial>.json  one episode per finished trial (harness)
    runs/<run_id>/report.html                   the run's HTML report (the pipeline's publish step)
    baselines/<name>.json                       named agent baselines (save_baseline)
    reports/<name>.html                         a report comparing runs (the demo's)

Writes are atomic: temp file + rename on a local disk, a single ``pipe`` (one PUT) on object
stores and ``memory://``; a reader never sees half an artifact. Everything is JSON -- nothing
is ever unpickled, so an artifact from an untrusted bucket is safe to load.

>>> s = Store("memory://ek-doctest")
>>> d = s.put_artifact({"b": 1, "a": [1, 2]})
>>> s.get_artifact(d)
{'a': [1, 2], 'b': 1}
>>> s.read_bytes(f"artifacts/{d}.json")
b'{"a":[1,2],"b":1}'
>>> s.validate_name("../etc")
Traceback (most recent call last):
...
ek_agents.errors.InvalidInput: invalid name '../etc': use letters, digits and . _ - @ + = , (no '/', no '..', no absolute path), starting with a letter, digit or '_'
"""
from __future__ import annotations

import base64
import hashlib
import importlib.util
import os
import re
import tempfile
from collections.abc import Iterable
from typing import Any, Optional, Union

from . import parsing
from .core import canonical_json
from .errors import ArtifactNotFound, IntegrityError, InvalidInput, MissingDependency, StoreError

__all__ = ["Store", "open_store", "canonical_json", "sha256_hex", "parse_json", "episode_key",
           "run_key", "run_file_key", "report_key", "task_key", "read_url", "write_url", "DEFAULT_STORE", "run_prefix",
           "episodes_prefix", "cache_key", "artifact_key", "baseline_key"]

#: Store used when neither ``url`` nor the ``EK_STORE`` environment variable is given.
DEFAULT_STORE = "./.ek"

_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._@+=,-]{0,199}")
# Windows device names, any case, with or without an extension (CON, nul.json, com1.x.y)
_RESERVED = re.compile(r"(?i)(CON|PRN|AUX|NUL|COM[0-9\u00b9\u00b2\u00b3]|LPT[0-9\u00b9\u00b2\u00b3])(\..*)?")
_DIGEST = re.compile(r"[0-9a-f]{64}")
_TMP = ".tmp-"
# protocol -> (module that implements it, the extra that installs it)
_OPTIONAL = {"s3": ("s3fs", "s3"), "s3a": ("s3fs", "s3"), "gs": ("gcsfs", "gcs"),
             "gcs": ("gcsfs", "gcs"), "az": ("adlfs", "azure"), "abfs": ("adlfs", "azure")}


def sha256_hex(data: bytes) -> str:
    """Hex sha256 of ``data``."""
    return hashlib.sha256(data).hexdigest()


def task_key(task_id: str) -> str:
    """A path segment for ``task_id``: itself when it is a safe name, else an encoded form.

    Unsafe ids (with ``/``, spaces, a leading dot, ...) become ``~`` + urlsafe base64 of the id
    (``~~`` + its sha256 when that would be too long); ``~`` never starts a safe name, so the
    two spaces cannot collide.

    >>> task_key("refund-1"), task_key("shop/refund 1")
    ('refund-1', '~c2hvcC9yZWZ1bmQgMQ')
    """
    if not isinstance(task_id, str):
        raise InvalidInput(f"task_id must be a string, got {task_id!r}")
    if _NAME.fullmatch(task_id):
        return task_id
    enc = base64.urlsafe_b64encode(task_id.encode("utf-8")).decode("ascii").rstrip("=")
    return "~" + enc if len(enc) <= 180 else "~~" + sha256_hex(task_id.encode("utf-8"))


def episode_key(run_id: str, task_id: str, trial: int) -> str:
    """Store key of one persisted trial: ``runs/<run_id>/episodes/<task>/<trial>.json``.

    >>> episode_key("r1", "t1", 3)
    'runs/r1/episodes/t1/3.json'
    """
    if isinstance(trial, bool) or not isinstance(trial, int) or trial < 0:
        raise InvalidInput(f"trial must be an int >= 0, got {trial!r}")
    return f"runs/{Store.validate_name(run_id)}/episodes/{task_key(task_id)}/{trial}.json"


def run_key(run_id: str, name: str) -> str:
    """Store key of a run's document ``name``: ``runs/<run_id>/<name>.json``.

    >>> run_key("r1", "manifest")
    'runs/r1/manifest.json'
    """
    return f"runs/{Store.validate_name(run_id, what='run id')}/{name}.json"


def run_file_key(run_id: str, filename: str) -> str:
    """Store key of a file a run keeps beside its documents: ``runs/<run_id>/<filename>``
    (``filename`` a safe name with its extension, e.g. ``report.html``).

    >>> run_file_key("r1", "report.html")
    'runs/r1/report.html'
    """
    return f"{run_prefix(run_id)}/{Store.validate_name(filename, what='run file name')}"


def run_prefix(run_id: str) -> str:
    """Store prefix of everything a run wrote: ``runs/<run_id>``."""
    return f"runs/{Store.validate_name(run_id, what='run id')}"


def episodes_prefix(run_id: str) -> str:
    """Store prefix of a run's per-trial episodes: ``runs/<run_id>/episodes``.

    >>> episodes_prefix("r1")
    'runs/r1/episodes'
    """
    return f"{run_prefix(run_id)}/episodes"


def cache_key(stage: str, digest: str) -> str:
    """Store key of the stage cache's index entry: ``cache/<stage>/<input digest>.json``."""
    return f"cache/{Store.validate_name(stage, what='stage')}/{Store.validate_name(digest, what='digest')}.json"


def artifact_key(sha256: str) -> str:
    """Store key of a content-addressed artifact: ``artifacts/<sha256>.json``."""
    return f"artifacts/{sha256}.json"


def baseline_key(name: str) -> str:
    """Store key of a named baseline: ``baselines/<name>.json``.

    >>> baseline_key("main")
    'baselines/main.json'
    """
    return f"baselines/{Store.validate_name(name, what='baseline name')}.json"


def report_key(name: str) -> str:
    """Store key of a report comparing runs: ``reports/<name>.html`` (e.g. the demo's).

    >>> report_key("demo")
    'reports/demo.html'
    """
    return f"reports/{Store.validate_name(name, what='report name')}.html"


class Store:
    """JSON artifacts under one fsspec URL (see the module docstring for layout and guarantees).

    ``url`` None means the ``EK_STORE`` environment variable, else ``./.ek``. Extra keyword
    ``options`` go to fsspec (e.g. ``anon=True``); never put credentials in a URL you share.
    """

    def __init__(self, url: Union[str, os.PathLike, None] = None, **options: Any) -> None:
        if url is None:
            url = os.environ.get("EK_STORE") or DEFAULT_STORE
        url = os.fspath(url)
        if not isinstance(url, str) or not url.strip():
            raise InvalidInput(f"store url must be a non-empty string or path, got {url!r}")
        self.url = url
        proto = _require_backend(url, "store")
        if proto in ("s3", "s3a") and "endpoint_url" not in options:
            endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
            if endpoint:  # explicit, so fsspec's instance cache keys on it
                options["endpoint_url"] = endpoint
        from fsspec.core import url_to_fs

        try:
            self.fs, root = url_to_fs(url, **options)
        except ImportError as exc:
            raise MissingDependency(f"store url {url!r} needs an fsspec backend that is not "
                                    f"installed ({exc}); install it, e.g. pip install 'ek-agents[s3]'"
                                    ) from None
        except ValueError as exc:
            raise InvalidInput(f"store url {url!r} is not a usable fsspec URL ({exc})") from None
        self._root = str(root).rstrip("/")
        self._local = "file" in _protocols(self.fs)
        if proto in ("s3", "s3a") and not self._root:
            raise InvalidInput(f"store url {url!r} names no bucket: use s3://<bucket>[/<prefix>]")

    def __repr__(self) -> str:
        return f"Store({self.url!r})"

    # -- names and keys ---------------------------------------------------------------------
    @staticmethod
    def validate_name(name: Any, *, what: str = "name") -> str:
        """Return ``name`` if it is a safe run id / baseline name, else raise InvalidInput.

        Refused: empty, ``/``, ``..``, absolute paths, anything outside ``[A-Za-z0-9._@+=,-]``,
        a name ending in ``.`` and Windows-reserved device names (``CON``, ``nul.json``,
        ``COM1``...: a store must be copyable to any filesystem).
        """
        if not isinstance(name, str) or not _NAME.fullmatch(name) or name in (".", ".."):
            raise InvalidInput(
                f"invalid {what} {name!r}: use letters, digits and . _ - @ + = , (no '/', no "
                "'..', no absolute path), starting with a letter, digit or '_'")
        if name.endswith("."):
            raise InvalidInput(f"invalid {what} {name!r}: a name may not end with '.' (Windows "
                               f"drops it); use {name.rstrip('.') or 'another name'!r}")
        if _RESERVED.fullmatch(name):
            raise InvalidInput(f"invalid {what} {name!r}: {name.split('.')[0].upper()} is a "
                               "reserved device name on Windows; pick another name (e.g. add a "
                               "suffix: '" + name.split('.')[0] + "-1')")
        return name

    def _path(self, key: str) -> str:
        if not isinstance(key, str) or not key or key.startswith("/") or "\\" in key or "\x00" in key:
            raise InvalidInput(f"invalid store key {key!r}: a '/'-separated path relative to the store root")
        parts = key.split("/")
        if any(p in ("", ".", "..") or p.startswith(_TMP) for p in parts):
            raise InvalidInput(f"invalid store key {key!r}: empty, '.', '..' or temp segments are refused")
        return f"{self._root}/{key}"

    def _key(self, path: str) -> Optional[str]:
        path = self.fs._strip_protocol(path).rstrip("/")
        head = self._root + "/"
        if not path.startswith(head):
            return None
        key = path[len(head):]
        if any(p.startswith(_TMP) for p in key.split("/")):
            return None
        return key

    # -- bytes ------------------------------------------------------------------------------
    def write_bytes(self, key: str, data: bytes) -> str:
        """Write ``data`` at ``key`` atomically; return its sha256."""
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise InvalidInput(f"write_bytes({key!r}) needs bytes, got {type(data).__name__}")
        data = bytes(data)
        path = self._path(key)
        try:
            if self._local:
                _atomic_local_write(path, data)
            else:  # one PUT on object stores; one dict assignment on memory://
                self.fs.pipe_file(path, data)
        except OSError as exc:
            raise StoreError(f"cannot write {key!r} to store {self.url!r}: {exc}") from None
        return sha256_hex(data)

    def read_bytes(self, key: str) -> bytes:
        """The bytes stored at ``key`` (ArtifactNotFound when absent)."""
        path = self._path(key)
        try:
            return bytes(self.fs.cat_file(path))
        except FileNotFoundError:
            raise ArtifactNotFound(f"{key!r} is not in store {self.url!r}") from None
        except OSError as exc:
            raise StoreError(f"cannot read {key!r} from store {self.url!r}: {exc}") from None

    def exists(self, key: str) -> bool:
        """Whether ``key`` holds an artifact."""
        path = self._path(key)
        try:
            return bool(self.fs.isfile(path))
        except OSError as exc:
            raise StoreError(f"cannot check {key!r} in store {self.url!r}: {exc}") from None

    def list(self, prefix: str = "") -> list[str]:
        """Sorted keys of every artifact under the folder ``prefix`` ('' = the whole store)."""
        path = self._path(prefix.rstrip("/")) if prefix.strip("/") else self._root
        try:
            self.fs.invalidate_cache(path)  # another process may have written since
            found = self.fs.find(path)
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise StoreError(f"cannot list {prefix!r} in store {self.url!r}: {exc}") from None
        return sorted(k for k in (self._key(p) for p in found) if k)

    def delete(self, key: str) -> bool:
        """Remove ``key``; return whether it existed."""
        path = self._path(key)
        if not self.exists(key):  # S3 answers a DELETE of a missing key with 204
            return False
        try:
            self.fs.rm_file(path)
        except FileNotFoundError:
            return False
        except OSError as exc:
            raise StoreError(f"cannot delete {key!r} from store {self.url!r}: {exc}") from None
        self.fs.invalidate_cache(path)
        return True

    def digest(self, key: str) -> str:
        """sha256 of the bytes stored at ``key``."""
        return sha256_hex(self.read_bytes(key))

    # -- JSON -------------------------------------------------------------------------------
    def write_json(self, key: str, obj: Any) -> str:
        """Write ``obj`` as canonical JSON (see :func:`canonical_json`); return its sha256."""
        return self.write_bytes(key, canonical_json(obj))

    def read_json(self, key: str) -> Any:
        """Parse the JSON stored at ``key``."""
        return parse_json(self.read_bytes(key), key)

    def write_jsonl(self, key: str, rows: Iterable[Any]) -> str:
        """Write ``rows`` as JSON Lines (one canonical JSON value per line); return sha256."""
        return self.write_bytes(key, b"".join(canonical_json(r) + b"\n" for r in rows))

    def read_jsonl(self, key: str) -> list:
        """The rows of the JSON Lines file at ``key`` (blank lines skipped)."""
        data = self.read_bytes(key)
        return [parse_json(line, f"{key} line {i}") for i, line in enumerate(data.splitlines(), 1)
                if line.strip()]

    # -- content-addressed artifacts ----------------------------------------------------------
    def put_artifact(self, obj: Any) -> str:
        """Store ``obj`` at ``artifacts/<sha256>.json``; return the sha256 (idempotent)."""
        data = canonical_json(obj)
        digest = sha256_hex(data)
        key = f"artifacts/{digest}.json"
        if not self.exists(key):
            self.write_bytes(key, data)
        return digest

    def get_artifact(self, digest: str) -> Any:
        """Load and verify the artifact ``digest`` (IntegrityError if its bytes changed)."""
        if not isinstance(digest, str) or not _DIGEST.fullmatch(digest):
            raise InvalidInput(f"artifact digest must be 64 lowercase hex characters, got {digest!r}")
        key = f"artifacts/{digest}.json"
        data = self.read_bytes(key)
        actual = sha256_hex(data)
        if actual != digest:
            raise IntegrityError(
                f"artifact {key!r} in store {self.url!r} is corrupt or tampered with: its bytes "
                f"hash to {actual}, not {digest}; re-create it from its inputs")
        return parse_json(data, key)

    # -- runs and baselines -----------------------------------------------------------------
    def write_manifest(self, run_id: str, manifest: Any) -> str:
        """Write ``runs/<run_id>/manifest.json``; return its sha256."""
        return self.write_json(run_key(run_id, "manifest"), manifest)

    def read_manifest(self, run_id: str) -> dict:
        """The manifest of ``run_id`` (ArtifactNotFound when the run has none)."""
        key = run_key(run_id, "manifest")
        try:
            return self.read_json(key)
        except ArtifactNotFound:
            raise ArtifactNotFound(f"run {run_id!r} has no manifest in store {self.url!r}") from None

    def save_baseline(self, name: str, data: Any) -> str:
        """Write ``baselines/<name>.json``; return its sha256."""
        return self.write_json(f"baselines/{self.validate_name(name, what='baseline name')}.json", data)

    def load_baseline(self, name: str) -> Optional[dict]:
        """The baseline ``name``, or None when there is none."""
        key = f"baselines/{self.validate_name(name, what='baseline name')}.json"
        try:
            return self.read_json(key)
        except ArtifactNotFound:
            return None


def read_url(url: Union[str, os.PathLike], *, what: str = "file",
             invalid: type = InvalidInput) -> bytes:
    """All bytes of one user-named file: a local path, ``file://`` or any fsspec URL.

    The one reader behind every loader (suites, logs, price catalogs), so that each says the
    same thing about a missing file (:class:`~ek_agents.errors.ArtifactNotFound`), a missing
    backend (:class:`~ek_agents.errors.MissingDependency` naming the extra) or a folder
    (``invalid``, an :class:`~ek_agents.errors.InvalidInput` subclass of the caller's choice).

    >>> _ = write_url("memory://ek-doctest/x.txt", b"hi"); read_url("memory://ek-doctest/x.txt")
    b'hi'
    """
    text = _url_text(url, what, invalid)
    proto = _require_backend(text, what)
    import fsspec

    try:
        with fsspec.open(text, "rb") as fh:
            return fh.read()
    except FileNotFoundError:
        raise ArtifactNotFound(f"no such {what}: {text!r} (check the path or URL)") from None
    except IsADirectoryError:
        raise invalid(f"{text!r} is a directory; give the {what} inside it") from None
    except ImportError as exc:
        raise MissingDependency(f"reading {text!r} needs an fsspec backend for {proto!r} "
                                f"({exc}): pip install 'ek-agents[s3]' for s3://") from None
    except ValueError as exc:  # fsspec: unknown protocol
        raise invalid(f"cannot open {what} {text!r}: {exc}") from None
    except OSError as exc:
        raise StoreError(f"cannot read {what} {text!r}: {exc}") from None


def write_url(url: Union[str, os.PathLike], data: bytes, *, what: str = "file") -> str:
    """Write ``data`` to one user-named file (atomically where the filesystem allows);
    return its sha256."""
    text = _url_text(url, what, InvalidInput)
    _require_backend(text, what)
    from fsspec.core import url_to_fs

    try:
        fs, path = url_to_fs(text)
        if "file" in _protocols(fs):
            _atomic_local_write(path, bytes(data))
        else:
            fs.pipe_file(path, bytes(data))
    except ValueError as exc:
        raise InvalidInput(f"cannot write {what} {text!r}: {exc}") from None
    except OSError as exc:
        raise StoreError(f"cannot write {what} {text!r}: {exc}") from None
    return sha256_hex(bytes(data))


def _url_text(url: Any, what: str, invalid: type) -> str:
    if isinstance(url, os.PathLike):
        url = os.fspath(url)
    if not isinstance(url, str) or not url.strip():
        raise invalid(f"expected the path or URL of a {what} (str or pathlib.Path), got {url!r}")
    return url


def _require_backend(url: str, what: str) -> str:
    proto = url.split("://", 1)[0].lower() if "://" in url else "file"
    if proto in _OPTIONAL and importlib.util.find_spec(_OPTIONAL[proto][0]) is None:
        mod, extra = _OPTIONAL[proto]
        raise MissingDependency(f"reading or writing {what} {url!r} needs {mod}: "
                                f"pip install 'ek-agents[{extra}]'")
    return proto


def open_store(rootdir: Union[Store, str, os.PathLike, None] = None) -> Store:
    """``rootdir`` as a :class:`Store`: a Store passes through, a URL/path opens one."""
    return rootdir if isinstance(rootdir, Store) else Store(rootdir)


def _protocols(fs: Any) -> tuple:
    p = fs.protocol
    return (p,) if isinstance(p, str) else tuple(p)


def parse_json(data: bytes, where: str) -> Any:
    """Parse stored JSON bytes (what :meth:`Store.read_json` does after reading) through
    :func:`ek_agents.parsing.parse_json` (bounded); bytes that are not JSON raise
    IntegrityError naming ``where``."""
    try:
        # lone surrogates allowed: canonical_json writes them (as \ud800 escapes), so a store
        # must read them back; refusing them belongs at write time
        return parsing.parse_json(data, where=f"stored {where!r}", error=IntegrityError,
                                  lone_surrogates="allow")
    except IntegrityError as exc:
        raise IntegrityError(f"{exc}; it was not written by this store or was damaged: delete "
                             "it and re-create it") from None


def _atomic_local_write(path: str, data: bytes) -> None:
    folder = os.path.dirname(path)
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=_TMP, dir=folder)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
