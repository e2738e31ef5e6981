"""The artifact store: the one module of ek-agents that touches fsspec.

A :class:`Store` is a folder of JSON artifacts behind any fsspec URL -- a local path,
``file://``, ``memory://`` or ``s3://`` (S3 needs ``pip install 'ek-agents[s3]'``; endpoint and
credentials come from the environment -- ``AWS_ENDPOINT_URL``, ``AWS_ACCESS_KEY_ID``, ... --
and are never written to the store). Layout under the root::

    artifacts/<sha256>.json                     content-addressed JSON (put_artifact)
    runs/<run_id>/manifest.json                 a run's manifest (write_manifest)
    runs/<run_id>/episodes/<task>/<trial>.json  one episode per finished trial (older runs)
    runs/<run_id>/segments/<sha256>.jsonl.zst   a segment of finished trials (harness, segments)
    runs/<run_id>/segment-index/<writer>.json   one writer's segments and their trials
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
import dataclasses
import functools
import hashlib
import importlib.util
import math
import os
import random
import re
import socket
import tempfile
import time
import uuid
from collections.abc import Callable, Iterable
from typing import Any, Optional, Union
from urllib.parse import parse_qsl

from . import parsing
from .core import canonical_json, shape
from .errors import (ArtifactNotFound, BucketNotFound, EkAgentsError, IntegrityError, InvalidInput,
                     MissingDependency, RunInUse, StoreAccessDenied, StoreError, StoreTimeout,
                     StoreUnreachable, did_you_mean)

__all__ = ["Store", "StoreSettings", "open_store", "canonical_json", "sha256_hex", "parse_json",
           "episode_key", "run_key", "run_file_key", "report_key", "task_key", "read_url",
           "write_url", "DEFAULT_STORE", "TMP_MAX_AGE_S", "run_prefix", "episodes_prefix",
           "cache_key", "artifact_key", "baseline_key", "Lease", "lease_key", "acquire_lease",
           "release_lease", "break_lease", "read_lease", "segments_prefix", "segment_key",
           "segment_sha256", "segment_index_prefix", "segment_index_key"]

#: Store used when neither ``url`` nor the ``EK_STORE`` environment variable is given.
DEFAULT_STORE = "./.ek"

_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._@+=,-]{0,199}")
# Windows device names, any case, with or without an extension (CON, nul.json, com1.x.y)
_RESERVED = re.compile(r"(?i)(CON|PRN|AUX|NUL|COM[0-9\u00b9\u00b2\u00b3]|LPT[0-9\u00b9\u00b2\u00b3])(\..*)?")
_DIGEST = re.compile(r"[0-9a-f]{64}")
_TMP = ".tmp-"
#: A temp file of a local write older than this is an orphan whoever wrote it (seconds).
TMP_MAX_AGE_S = 3600.0
# this host, as it appears in the names of our temp files: .tmp-<host>-<pid>-<random>
_HOST = hashlib.sha256(socket.gethostname().encode("utf-8")).hexdigest()[:8]
_S3 = ("s3", "s3a")
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
    if type(run_id) is str and type(task_id) is str:  # the usual case: checked once per pair
        return f"{_trials_folder(run_id, task_id)}/{trial}.json"
    return f"runs/{Store.validate_name(run_id)}/episodes/{task_key(task_id)}/{trial}.json"


@functools.lru_cache(maxsize=1 << 16)
def _trials_folder(run_id: str, task_id: str) -> str:
    """:func:`episode_key`'s folder of one task's trials, the names checked once (a run's
    ``k`` trials of a task share it; an invalid name raises, and is not cached)."""
    return f"runs/{Store.validate_name(run_id)}/episodes/{task_key(task_id)}"


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


def segments_prefix(run_id: str) -> str:
    """Store prefix of a run's trial segments: ``runs/<run_id>/segments``."""
    return f"{run_prefix(run_id)}/segments"


def segment_key(run_id: str, sha256: str) -> str:
    """Store key of a segment of a run's trials, addressed by the sha256 of its bytes:
    ``runs/<run_id>/segments/<sha256>.jsonl.zst`` (:mod:`ek_agents.segments`).

    >>> segment_key("r1", "ab" * 32)[:30]
    'runs/r1/segments/ababababababab'
    """
    if not (isinstance(sha256, str) and _SHA256.fullmatch(sha256)):
        raise InvalidInput(f"segment sha256 must be 64 lowercase hex digits, got {sha256!r:.80}")
    return f"{segments_prefix(run_id)}/{sha256}.jsonl.zst"


def segment_sha256(key: str) -> Optional[str]:
    """The sha256 a segment key names (:func:`segment_key`), None when ``key`` is not one.

    >>> segment_sha256(segment_key("r1", "ab" * 32)) == "ab" * 32, segment_sha256("runs/r1/x.json")
    (True, None)
    """
    head, _, name = key.rpartition("/")
    if not head.endswith("/segments") or not name.endswith(".jsonl.zst"):
        return None
    sha = name[:-len(".jsonl.zst")]
    return sha if _SHA256.fullmatch(sha) else None


def segment_index_prefix(run_id: str) -> str:
    """Store prefix of a run's segment index: ``runs/<run_id>/segment-index``."""
    return f"{run_prefix(run_id)}/segment-index"


def segment_index_key(run_id: str, writer: str) -> str:
    """Store key of one writer's part of a run's segment index:
    ``runs/<run_id>/segment-index/<writer>.json``.

    >>> segment_index_key("r1", "w1")
    'runs/r1/segment-index/w1.json'
    """
    return f"{segment_index_prefix(run_id)}/{Store.validate_name(writer, what='segment writer')}.json"


_SHA256 = re.compile(r"[0-9a-f]{64}")


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


@dataclasses.dataclass(frozen=True)
class StoreSettings:
    """How long a network store (``s3://``) may take before an operation fails.

    Each is set, first found wins, by a keyword of :class:`Store`, an option of the store URL
    (``s3://bucket/prefix?connect_timeout=2&read_timeout=5``), an environment variable
    (``EK_STORE_CONNECT_TIMEOUT``, ``EK_STORE_READ_TIMEOUT``, ``EK_STORE_RETRY_WINDOW``), else
    the default below.

    - ``connect_timeout`` (5 s): the longest wait to open a connection to the endpoint;
    - ``read_timeout`` (10 s): the longest the endpoint may stay silent; one request attempt is
      also cut off after ``connect_timeout + read_timeout`` (+1 s per MiB sent, +30 s for a
      download), whatever the server does;
    - ``retry_window`` (15 s): a failed attempt that may succeed later (refused, reset, timed
      out, 5xx) is retried with backoff (0.25 s doubling to 4 s) while a retry can start
      within this many seconds of the first attempt; 0 = no retry.

    So with the endpoint gone, one store operation fails within :attr:`worst_case_s`
    (``retry_window + connect_timeout + read_timeout`` = 30 s by default) with a typed
    :class:`~ek_agents.errors.StoreError`.

    >>> StoreSettings().worst_case_s
    30.0
    >>> StoreSettings.resolve("s3://b/p?read_timeout=2", {}).read_timeout
    2.0
    """

    connect_timeout: float = 5.0
    read_timeout: float = 10.0
    retry_window: float = 15.0

    @property
    def worst_case_s(self) -> float:
        """Seconds within which one operation fails when the endpoint is gone."""
        return self.retry_window + self.connect_timeout + self.read_timeout

    def attempt_limit(self, sent: int = 0, *, download: bool = False) -> float:
        """Hard limit of one request attempt that sends ``sent`` bytes."""
        return (self.connect_timeout + self.read_timeout + sent / 2 ** 20
                + (30.0 if download else 0.0))

    @classmethod
    def resolve(cls, url: str, options: dict) -> "StoreSettings":
        """The settings for ``url``: keywords popped from ``options``, then the URL's query,
        then the environment, then the defaults (see the class docstring)."""
        query = _url_query(url)
        values = {}
        for f in dataclasses.fields(cls):
            env = "EK_STORE_" + f.name.upper()
            if f.name in options:
                raw, where = options.pop(f.name), f"keyword {f.name}"
            elif f.name in query:
                raw, where = query[f.name], f"option {f.name!r} of store url {url!r}"
            elif os.environ.get(env, "").strip():
                raw, where = os.environ[env], f"environment variable {env}"
            else:
                continue
            values[f.name] = _seconds(raw, where, allow_zero=f.name == "retry_window")
        return cls(**values)


def _seconds(raw: Any, where: str, *, allow_zero: bool) -> float:
    try:
        value = float(raw)
    except (TypeError, ValueError):
        value = math.nan
    if not math.isfinite(value) or value < 0 or (value == 0 and not allow_zero):
        low = ">= 0" if allow_zero else "> 0"
        raise InvalidInput(f"{where} must be a finite number of seconds {low}, got {raw!r}")
    return value


def _split_url(url: str) -> tuple[str, str]:
    """``(url without its query, query)``; only network URLs (s3://) take options."""
    proto = url.split("://", 1)[0].lower() if "://" in url else "file"
    if proto in _S3 and "?" in url:
        base, query = url.split("?", 1)
        return base, query
    return url, ""


def _url_query(url: str) -> dict:
    base, query = _split_url(url)
    if not query:
        return {}
    try:
        pairs = parse_qsl(query, keep_blank_values=True, strict_parsing=True)
    except ValueError:
        raise InvalidInput(f"store url {url!r}: cannot read its options {query!r}; write them as "
                           "?name=value&name=value") from None
    known = [f.name for f in dataclasses.fields(StoreSettings)]
    for name, _ in pairs:
        if name not in known:
            raise InvalidInput(f"store url {url!r}: unknown option {name!r} (known: "
                               f"{', '.join(known)}){did_you_mean(name, known)}")
    return dict(pairs)


def _s3_options(settings: StoreSettings, options: dict) -> dict:
    """fsspec options of an s3:// filesystem: no listings cache (a stale listing made fresh
    runs fail), the timeouts, and no retries below ours (botocore's and s3fs's retry loops
    multiply each other and cannot bound the total time: the store retries, once)."""
    out = dict(options)
    out.setdefault("use_listings_cache", False)
    if "endpoint_url" not in out:
        endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
        if endpoint:  # explicit, so fsspec's instance cache keys on it
            out["endpoint_url"] = endpoint
    config = dict(out.get("config_kwargs") or {})
    config.setdefault("connect_timeout", settings.connect_timeout)
    config.setdefault("read_timeout", settings.read_timeout)
    config.setdefault("retries", {"total_max_attempts": 1, "mode": "standard"})
    out["config_kwargs"] = config
    return out


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
        self.settings = StoreSettings.resolve(url, options)
        base, _ = _split_url(url)
        if proto in _S3:
            options = _s3_options(self.settings, options)
        from fsspec.core import url_to_fs

        try:
            self.fs, root = url_to_fs(base, **options)
        except ImportError as exc:
            raise MissingDependency(f"store url {url!r} needs an fsspec backend that is not "
                                    f"installed ({exc}); install it, e.g. pip install 'ek-agents[s3]'"
                                    ) from None
        except ValueError as exc:
            raise InvalidInput(f"store url {url!r} is not a usable fsspec URL ({exc})") from None
        self._root = str(root).rstrip("/")
        self._local = "file" in _protocols(self.fs)
        self._s3 = proto in _S3
        self._swept: set = set()  # local folders whose orphaned temp files were removed
        self._bucket_ok = False
        if self._s3:
            if not self._root:
                raise InvalidInput(f"store url {url!r} names no bucket: use s3://<bucket>[/<prefix>]")
            self.fs.retries = 1  # s3fs's own retry loop off: _call retries, within its window

    def __repr__(self) -> str:
        return f"Store({self.url!r})"

    @property
    def local(self) -> bool:
        """Whether the store is a folder on a local disk (a write is a file rename, not a
        network request)."""
        return self._local

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

    # -- I/O with retries and typed errors --------------------------------------------------
    def _call(self, op: str, key: str, fn: Callable, *args: Any, sent: int = 0,
              download: bool = False) -> Any:
        """``fn(*args)`` on the filesystem, retried and typed by :func:`_retrying`; a missing
        object comes back as FileNotFoundError for the caller to decide."""
        return _retrying(self.fs, self.settings, fn, *args, sent=sent, download=download,
                         what=f"{op} {key!r} in store {self.url!r}")

    def _check_bucket(self) -> None:
        """On S3, a 'not found' may mean the whole bucket is gone: say so (checked once)."""
        if not self._s3 or self._bucket_ok:
            return
        bucket = self._root.split("/", 1)[0]
        try:
            self._call("check bucket", bucket, self.fs.info, bucket)
        except FileNotFoundError:
            raise BucketNotFound(
                f"store {self.url!r}: bucket {bucket!r} does not exist at "
                f"{_endpoint(self.fs)}: create it (e.g. aws s3 mb s3://{bucket}) or fix the store "
                "URL / AWS_ENDPOINT_URL") from None
        self._bucket_ok = True

    # -- bytes ------------------------------------------------------------------------------
    def write_bytes(self, key: str, data: bytes) -> str:
        """Write ``data`` at ``key`` atomically; return its sha256."""
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise InvalidInput(f"write_bytes({key!r}) needs bytes, got {type(data).__name__}")
        data = bytes(data)
        path = self._path(key)
        try:
            if self._local:
                self._call("write", key, _atomic_local_write, path, data, self._swept)
            else:  # one PUT on object stores; one dict assignment on memory://
                self._call("write", key, self.fs.pipe_file, path, data, sent=len(data))
        except FileNotFoundError:
            self._check_bucket()
            raise StoreError(f"cannot write {key!r} to store {self.url!r}: its folder is "
                             "gone (was the store deleted while writing?)") from None
        return sha256_hex(data)

    def read_bytes(self, key: str) -> bytes:
        """The bytes stored at ``key`` (ArtifactNotFound when absent)."""
        path = self._path(key)
        try:
            return bytes(self._call("read", key, self.fs.cat_file, path, download=True))
        except (FileNotFoundError, IsADirectoryError):
            self._check_bucket()
            raise ArtifactNotFound(f"{key!r} is not in store {self.url!r}") from None

    def exists(self, key: str) -> bool:
        """Whether ``key`` holds an artifact (a storage failure raises, never says False)."""
        path = self._path(key)
        try:
            info = self._call("check", key, self.fs.info, path)
        except FileNotFoundError:
            self._check_bucket()
            return False
        return info.get("type") == "file"

    def list(self, prefix: str = "") -> list[str]:
        """Sorted keys of every artifact under the folder ``prefix`` ('' = the whole store)."""
        path = self._path(prefix.rstrip("/")) if prefix.strip("/") else self._root
        self.fs.invalidate_cache(path)  # another process may have written since
        try:
            found = self._call("list", prefix, self.fs.find, path)
        except FileNotFoundError:
            found = []
        if not found:
            self._check_bucket()
        return sorted(k for k in (self._key(p) for p in found) if k)

    def delete(self, key: str) -> bool:
        """Remove ``key``; return whether it existed."""
        path = self._path(key)
        if not self.exists(key):  # S3 answers a DELETE of a missing key with 204
            return False
        try:
            self._call("delete", key, self.fs.rm_file, path)
        except FileNotFoundError:
            return False
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
        """Store ``obj`` at ``artifacts/<sha256>.json``; return the sha256 (idempotent).
        ``obj`` may be its canonical JSON bytes already."""
        data = obj if isinstance(obj, bytes) else canonical_json(obj)
        digest = sha256_hex(data)
        key = f"artifacts/{digest}.json"
        if not self.exists(key):
            self.write_bytes(key, data)
        return digest

    def get_artifact(self, digest: str) -> Any:
        """Load and verify the artifact ``digest`` (IntegrityError if its bytes changed)."""
        return parse_json(self.get_artifact_bytes(digest), f"artifacts/{digest}.json")

    def get_artifact_bytes(self, digest: str) -> bytes:
        """The verified bytes of the artifact ``digest`` (IntegrityError if they changed)."""
        if not isinstance(digest, str) or not _DIGEST.fullmatch(digest):
            raise InvalidInput(f"artifact digest must be 64 lowercase hex characters, got {digest!r}")
        key = f"artifacts/{digest}.json"
        data = self.read_bytes(key)
        actual = sha256_hex(data)
        if actual != digest:
            raise IntegrityError(
                f"artifact {key!r} in store {self.url!r} is corrupt or tampered with: its bytes "
                f"hash to {actual}, not {digest}; re-create it from its inputs")
        return data

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
    fs, path, settings = _open_url(text, what, invalid)
    try:
        return bytes(_retrying(fs, settings, fs.cat_file, path, download=True,
                               what=f"read {what} {text!r}"))
    except IsADirectoryError:
        raise invalid(f"{text!r} is a directory; give the {what} inside it") from None
    except FileNotFoundError:
        if fs.isdir(path):
            raise invalid(f"{text!r} is a directory; give the {what} inside it") from None
        raise ArtifactNotFound(f"no such {what}: {text!r} (check the path or URL)") from None


def write_url(url: Union[str, os.PathLike], data: bytes, *, what: str = "file") -> str:
    """Write ``data`` to one user-named file (atomically where the filesystem allows);
    return its sha256."""
    text = _url_text(url, what, InvalidInput)
    fs, path, settings = _open_url(text, what, InvalidInput)
    data = bytes(data)
    local = "file" in _protocols(fs)
    try:
        _retrying(fs, settings, _atomic_local_write if local else fs.pipe_file, path, data,
                  sent=len(data), what=f"write {what} {text!r}")
    except FileNotFoundError as exc:
        raise StoreError(f"cannot write {what} {text!r}: {exc}") from None
    return sha256_hex(data)


def _open_url(text: str, what: str, invalid: type) -> tuple:
    """``(filesystem, path, settings)`` of one user-named file, opened as a Store opens its
    root (s3://: the same timeouts, options and retry window)."""
    proto = _require_backend(text, what)
    options: dict = {}
    settings = StoreSettings.resolve(text, options)
    base, _ = _split_url(text)
    if proto in _S3:
        options = _s3_options(settings, options)
    from fsspec.core import url_to_fs

    try:
        fs, path = url_to_fs(base, **options)
    except ImportError as exc:
        raise MissingDependency(f"reading {text!r} needs an fsspec backend for {proto!r} "
                                f"({exc}): pip install 'ek-agents[s3]' for s3://") from None
    except ValueError as exc:  # fsspec: unknown protocol
        raise invalid(f"cannot open {what} {text!r}: {exc}") from None
    if proto in _S3:
        fs.retries = 1
    return fs, path, settings


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


def _atomic_local_write(path: str, data: bytes, swept: Optional[set] = None) -> None:
    folder = os.path.dirname(path)
    if swept is None or folder not in swept:
        os.makedirs(folder, exist_ok=True)
        if swept is not None:  # first write here: clear orphans once
            _sweep_tmp(folder)
            swept.add(folder)
    prefix = f"{_TMP}{_HOST}-{os.getpid()}-"
    try:
        fd, tmp = tempfile.mkstemp(prefix=prefix, dir=folder)
    except FileNotFoundError:  # the folder went away since its first write: made again
        os.makedirs(folder, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=prefix, dir=folder)
    try:
        try:  # plain descriptor calls: no file object per write (20,000 per flow run)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
            os.fchmod(fd, 0o644)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _sweep_tmp(folder: str) -> int:
    """Remove the orphaned temp files in ``folder``: those of a dead process on this host
    (a writer killed between its temp write and its rename), and any older than
    :data:`TMP_MAX_AGE_S`. A live writer's temp file is left alone. Return how many."""
    removed = 0
    now = time.time()
    try:
        names = [n for n in os.listdir(folder) if n.startswith(_TMP)]
    except OSError:
        return 0
    for name in names:
        tmp = os.path.join(folder, name)
        parts = name[len(_TMP):].split("-")
        mine = len(parts) >= 3 and parts[0] == _HOST and parts[1].isdigit()
        try:
            stale = (mine and not _pid_alive(int(parts[1]))) or now - os.path.getmtime(tmp) > TMP_MAX_AGE_S
            if stale:
                os.unlink(tmp)
                removed += 1
        except OSError:  # gone already (another sweeper, or its writer renamed it)
            pass
    return removed


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists, owned by someone else
        return True
    return True


# -- storage failures: retried while transient, then typed ---------------------------------

_TIMEOUT_NAMES = {"ReadTimeoutError", "ConnectTimeoutError", "TimeoutError", "FSTimeoutError",
                  "ServerTimeoutError", "SocketTimeoutError", "ConnectionTimeoutError"}
_UNREACHABLE_NAMES = {"EndpointConnectionError", "ConnectionClosedError", "ConnectionError",
                      "HTTPClientError", "ClientConnectorError", "ClientConnectionError",
                      "ServerDisconnectedError", "ClientOSError", "ClientPayloadError",
                      "IncompleteRead", "ProxyConnectionError", "ResponseStreamingError"}
_CREDENTIAL_NAMES = {"NoCredentialsError", "PartialCredentialsError", "CredentialRetrievalError"}
_DENIED_CODES = {"AccessDenied", "403", "InvalidAccessKeyId", "SignatureDoesNotMatch",
                 "ExpiredToken", "InvalidToken", "AllAccessDisabled", "AccountProblem"}
_BUSY_CODES = {"SlowDown", "InternalError", "ServiceUnavailable", "Throttling",
               "ThrottlingException", "RequestLimitExceeded", "503", "500", "502", "504"}
_NOT_FOUND = "not-found"


def _chain(exc: BaseException) -> list:
    out, seen = [], set()
    e: Optional[BaseException] = exc
    while e is not None and id(e) not in seen and len(out) < 10:
        out.append(e)
        seen.add(id(e))
        e = e.__cause__ or e.__context__
    return out


def _brief(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:200] if text else ''}".rstrip(": ")


def _classify(exc: BaseException) -> Optional[tuple]:
    """``(StoreError subclass or _NOT_FOUND, the underlying error)`` for a storage failure,
    None for anything else (a bug or bad input: re-raised as it is).

    botocore / aiohttp exceptions are recognised by class name (and S3 error code), so this
    module imports neither (``import ek_agents`` stays light, and local stores need no boto).
    """
    chain = _chain(exc)
    for e in chain:  # an S3 error code says most, wherever it sits in the chain
        response = getattr(e, "response", None)
        if not isinstance(response, dict) or not isinstance(response.get("Error"), dict):
            continue
        code = str(response["Error"].get("Code", ""))
        status = (response.get("ResponseMetadata") or {}).get("HTTPStatusCode")
        if code == "NoSuchBucket":
            return BucketNotFound, e
        if code in _DENIED_CODES or status == 403:
            return StoreAccessDenied, e
        if code in ("NoSuchKey", "404") or status == 404:
            return _NOT_FOUND, e
        if code == "RequestTimeout":
            return StoreTimeout, e
        if code in _BUSY_CODES or (isinstance(status, int) and status >= 500):
            return StoreUnreachable, e
    for e in chain:
        names = {c.__name__ for c in type(e).__mro__}
        if names & _TIMEOUT_NAMES:
            return StoreTimeout, e
        if names & _UNREACHABLE_NAMES:
            return StoreUnreachable, e
        if names & _CREDENTIAL_NAMES or isinstance(e, PermissionError):
            return StoreAccessDenied, e
        if isinstance(e, (FileNotFoundError, IsADirectoryError, NotADirectoryError)):
            return _NOT_FOUND, e
    top = type(exc).__module__.split(".", 1)[0]
    if isinstance(exc, OSError) or top in ("botocore", "aiobotocore", "aiohttp", "s3fs"):
        return StoreError, exc
    return None


def _endpoint(fs: Any) -> str:
    url = getattr(fs, "endpoint_url", None) or (getattr(fs, "client_kwargs", None) or {}).get(
        "endpoint_url")
    if url:
        return str(url)
    return "AWS S3" if "s3" in _protocols(fs) else "the local filesystem"


def _typed(kind: type, cause: BaseException, what: str, fs: Any, settings: StoreSettings,
           attempts: int, elapsed: float) -> StoreError:
    tried = f"; {attempts} attempts over {elapsed:.1f} s" if attempts > 1 else ""
    where = _endpoint(fs)
    if kind is StoreTimeout:
        fix = (f"the endpoint {where} did not answer within connect_timeout="
               f"{settings.connect_timeout:g} s / read_timeout={settings.read_timeout:g} s ("
               f"{_brief(cause)}{tried}): check that it is up, or raise the timeouts "
               "(EK_STORE_READ_TIMEOUT, or ?read_timeout= in the store URL); a run resumes "
               "with the same run id")
    elif kind is StoreUnreachable:
        fix = (f"the endpoint {where} is unreachable or failing ({_brief(cause)}{tried}): check "
               "that it is up and that AWS_ENDPOINT_URL points at it, then re-run; a run resumes "
               "with the same run id")
    elif kind is StoreAccessDenied:
        fix = (f"access denied by {where} ({_brief(cause)}): check the credentials "
               "(AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_PROFILE) and the bucket policy")
    elif kind is BucketNotFound:
        fix = (f"the bucket does not exist at {where} ({_brief(cause)}): create it or fix the "
               "store URL / AWS_ENDPOINT_URL")
    else:
        fix = f"{_brief(cause)}{tried}"
    return kind(f"cannot {what}: {fix}")


#: endpoint -> when an operation on it last gave up after its whole retry window (monotonic s)
_GAVE_UP: dict = {}


def _retrying(fs: Any, settings: StoreSettings, fn: Callable, *args: Any, what: str,
              sent: int = 0, download: bool = False) -> Any:
    """``fn(*args)``, retried with backoff while the failure is transient and a retry can
    start within ``settings.retry_window`` of the first attempt; on an async filesystem
    (s3fs) each attempt is cut off at ``settings.attempt_limit``. A missing object raises
    FileNotFoundError (callers decide what that means); every other storage failure raises
    its typed :class:`~ek_agents.errors.StoreError`; anything else passes through.

    Once one operation on an endpoint has given up after its whole window, the others do not
    each wait out a window of their own: those in flight stop at their next failure, and
    those started within a window of it make one attempt (the first success clears that).
    So a run with many writes in flight fails within about one window, not many.
    """
    kwargs = {}
    if getattr(fs, "async_impl", False):  # fsspec's sync() takes a timeout and cancels at it
        kwargs["timeout"] = settings.attempt_limit(sent, download=download)
    where = _endpoint(fs)
    t0 = time.monotonic()
    gave_up = _GAVE_UP.get(where)
    window = 0.0 if gave_up is not None and t0 - gave_up < settings.retry_window else \
        settings.retry_window
    delay, attempts = 0.25, 0
    while True:
        attempts += 1
        try:
            out = fn(*args, **kwargs)
            _GAVE_UP.pop(where, None)
            return out
        except EkAgentsError:
            raise
        except Exception as exc:  # noqa: BLE001 -- classified below; unknown ones re-raised
            found = _classify(exc)
            if found is None:
                raise
            kind, cause = found
            if kind is _NOT_FOUND:
                _GAVE_UP.pop(where, None)  # the endpoint answered
                raise FileNotFoundError(_brief(cause)) from None
            now = time.monotonic()
            elapsed = now - t0
            others_gave_up = (_GAVE_UP.get(where) or -math.inf) > t0
            if not kind.transient or others_gave_up or elapsed + delay > window:
                if kind.transient:
                    _GAVE_UP[where] = now
                raise _typed(kind, cause, what, fs, settings, attempts, elapsed) from None
        time.sleep(delay * random.uniform(0.5, 1.0))
        delay = min(delay * 2, 4.0)


# --------------------------------------------------------------------------- one writer per run
# A run id has one writer at a time: the lease ``runs/<run_id>/lease.json`` is created
# exclusively (O_EXCL on a local disk, a conditional PUT -- ``If-None-Match: *`` -- on S3,
# fsspec's ``mode="create"`` elsewhere) when a run starts writing and deleted when it ends.


@shape()
class Lease:
    """Who holds a run's lease: the process that may write the run's documents."""

    run_id: str
    """The run it guards."""
    token: str
    """Unique to one acquisition (release deletes the lease only while it is still this one)."""
    host: str = ""
    """The holder's host name."""
    pid: int = 0
    """The holder's process id."""
    acquired_at: float = 0.0
    """When it was taken (seconds since the epoch, UTC)."""

    def describe(self) -> str:
        """``pid 123 on host h since 2026-01-31T03:00:00Z``."""
        when = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.acquired_at))
        return f"pid {self.pid} on host {self.host!r} since {when}"

    def orphaned(self) -> bool:
        """True when the holder provably writes nothing any more: a process of this host that
        no longer exists, or this very process, which no longer holds it (its run ended while
        the store was unreachable, so the release could not delete it)."""
        if self.host == socket.gethostname() and self.pid == os.getpid():
            return self.token not in _HELD
        return self.is_stale()

    def is_stale(self) -> bool:
        """True when the holder is a process of this host that no longer exists."""
        if self.host != socket.gethostname() or self.pid <= 0:
            return False
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            return False
        return False


#: Tokens of the leases this process holds (acquired and not yet released).
_HELD: set = set()


def lease_key(run_id: str) -> str:
    """Store key of a run's writer lease: ``runs/<run_id>/lease.json``.

    >>> lease_key("r1")
    'runs/r1/lease.json'
    """
    return f"{run_prefix(run_id)}/lease.json"


def _lease_doc(lease: Lease) -> bytes:
    return canonical_json({"run_id": lease.run_id, "token": lease.token, "host": lease.host,
                           "pid": lease.pid, "acquired_at": lease.acquired_at})


def _create_exclusive(store: Store, key: str, data: bytes) -> bool:
    """Write ``data`` at ``key`` only if nothing is there; False when something is."""
    path = store._path(key)
    try:
        if store._local:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            try:
                fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                return False
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            return True
        try:
            store.fs.pipe_file(path, data, mode="create")
        except FileExistsError:
            return False
        except OSError as exc:  # s3fs: 412 Precondition Failed on an existing key
            if "PreconditionFailed" in str(exc) or "412" in str(exc) or "ConditionalRequestConflict" in str(exc):
                return False
            raise
        store.fs.invalidate_cache(path)
        return True
    except OSError as exc:
        raise StoreError(f"cannot create {key!r} in store {store.url!r}: {exc}") from None


def read_lease(store: Store, run_id: str) -> Optional[Lease]:
    """The lease held on ``run_id`` (None when nobody writes it)."""
    try:
        doc = store.read_json(lease_key(run_id))
    except ArtifactNotFound:
        return None
    except IntegrityError:  # a lease file that is not one: treat as held by an unknown writer
        return Lease(run_id=run_id, token="?")
    try:
        return Lease(**{f: doc[f] for f in ("run_id", "token", "host", "pid", "acquired_at")})
    except (KeyError, TypeError, InvalidInput):
        return Lease(run_id=run_id, token="?")


def acquire_lease(store: Store, run_id: str, *, wait_s: float = 0.0,
                  force: bool = False, poll_s: float = 0.2) -> Lease:
    """Take the writer lease of ``run_id``, or raise :class:`~ek_agents.errors.RunInUse`
    naming its holder.

    ``wait_s`` > 0 waits up to that many seconds for the holder to release it; ``force``
    first removes any lease there (explicitly asked: ``--break-lease``). A lease whose holder
    provably writes nothing any more (:meth:`Lease.orphaned`: a dead process of this host, or
    this process after a run whose release failed in an outage) is taken over without asking;
    one of another host is only ever broken explicitly.
    """
    lease = Lease(run_id=Store.validate_name(run_id, what="run id"), token=uuid.uuid4().hex,
                  host=socket.gethostname(), pid=os.getpid(), acquired_at=time.time())
    key = lease_key(run_id)
    if force:
        break_lease(store, run_id)
    deadline = time.monotonic() + max(0.0, float(wait_s))
    while True:
        if _create_exclusive(store, key, _lease_doc(lease)):
            _HELD.add(lease.token)
            return lease
        holder = read_lease(store, run_id)
        if holder is None:  # released between our attempt and the read: try again
            continue
        if holder.orphaned():
            break_lease(store, run_id)
            continue
        if time.monotonic() >= deadline:
            stale = " (its process is gone: pass --break-lease / break_lease=True)" if holder.is_stale() else ""
            raise RunInUse(f"run {run_id!r} is being written by another process: "
                           f"{holder.describe()}{stale}; wait for it (--wait-lease SECONDS), use "
                           "another run id, or break a stale lease explicitly (--break-lease)")
        time.sleep(poll_s)


def release_lease(store: Store, lease: Lease) -> bool:
    """Give the lease back (only while it is still ``lease``); whether it was removed. A store
    that fails now leaves the lease behind (False): it is orphaned, and the next run of this
    host takes it over (:func:`acquire_lease`)."""
    _HELD.discard(lease.token)
    try:
        held = read_lease(store, lease.run_id)
        if held is None or held.token != lease.token:
            return False
        return store.delete(lease_key(lease.run_id))
    except StoreError:
        return False


def break_lease(store: Store, run_id: str) -> Optional[Lease]:
    """Remove ``run_id``'s lease whoever holds it (for a holder that died); the broken lease."""
    held = read_lease(store, run_id)
    if held is not None:
        store.delete(lease_key(run_id))
    return held
