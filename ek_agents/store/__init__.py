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

The package's modules: :mod:`.keys` (the artifact layout: every key and prefix),
:mod:`.settings` (timeouts and retries from the URL / environment), :mod:`.faults`
(a backend's errors classified and retried), :mod:`.lease` (one writer per run). This
module holds :class:`Store` and the one-shot URL reads and writes.

May import: ``errors``, ``core``, ``parsing`` (see ``ek_agents.layers``); fsspec is imported
here and nowhere else in ek-agents.
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import socket
import tempfile
import time
from collections.abc import Callable, Iterable
from typing import Any, Optional, Union

from .. import parsing
from ..core import canonical_json
from ..errors import (ArtifactNotFound, BucketNotFound, IntegrityError, InvalidInput,
                     MissingDependency, StoreError)
from .faults import endpoint_of, retrying
from .keys import DIGEST_PATTERN
from .settings import S3_PROTOCOLS, protocols_of, s3_options, split_url

# the package's public names, re-exported explicitly (``from ek_agents.store import run_key``)
from .keys import (sha256_hex as sha256_hex, episode_key as episode_key, run_key as run_key,
    run_file_key as run_file_key, report_key as report_key, task_key as task_key,
    run_prefix as run_prefix, episodes_prefix as episodes_prefix, cache_key as cache_key,
    artifact_key as artifact_key, baseline_key as baseline_key, validate_name as validate_name,
    segments_prefix as segments_prefix, segment_key as segment_key,
    segment_sha256 as segment_sha256, segment_index_prefix as segment_index_prefix,
    segment_index_key as segment_index_key)
from .settings import (StoreSettings as StoreSettings)
from .lease import (Lease as Lease, lease_key as lease_key, acquire_lease as acquire_lease,
    release_lease as release_lease, break_lease as break_lease, read_lease as read_lease)

__all__ = ["Store", "StoreSettings", "open_store", "open_url", "canonical_json", "sha256_hex", "parse_json",
           "episode_key", "run_key", "run_file_key", "report_key", "task_key", "read_url",
           "write_url", "DEFAULT_STORE", "TMP_MAX_AGE_S", "run_prefix", "episodes_prefix",
           "cache_key", "artifact_key", "baseline_key", "Lease", "lease_key", "acquire_lease",
           "release_lease", "break_lease", "read_lease", "validate_name", "segments_prefix",
           "segment_key", "segment_sha256", "segment_index_prefix", "segment_index_key"]

#: Store used when neither ``url`` nor the ``EK_STORE`` environment variable is given.
DEFAULT_STORE = "./.ek"

_TMP = ".tmp-"
#: A temp file of a local write older than this is an orphan whoever wrote it (seconds).
TMP_MAX_AGE_S = 3600.0
# this host, as it appears in the names of our temp files: .tmp-<host>-<pid>-<random>
_HOST = hashlib.sha256(socket.gethostname().encode("utf-8")).hexdigest()[:8]

# protocol -> (module that implements it, the extra that installs it)
_OPTIONAL = {"s3": ("s3fs", "s3"), "s3a": ("s3fs", "s3"), "gs": ("gcsfs", "gcs"),
             "gcs": ("gcsfs", "gcs"), "az": ("adlfs", "azure"), "abfs": ("adlfs", "azure")}

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
        base, _ = split_url(url)
        if proto in S3_PROTOCOLS:
            options = s3_options(self.settings, options)
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
        self._local = "file" in protocols_of(self.fs)
        self._s3 = proto in S3_PROTOCOLS
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
        """Return ``name`` if it is a safe run id / baseline name, else raise InvalidInput
        (:func:`ek_agents.store.keys.validate_name`: the rules live with the keys)."""
        return validate_name(name, what=what)

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
        """``fn(*args)`` on the filesystem, retried and typed by :func:`retrying`; a missing
        object comes back as FileNotFoundError for the caller to decide."""
        return retrying(self.fs, self.settings, fn, *args, sent=sent, download=download,
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
                f"{endpoint_of(self.fs)}: create it (e.g. aws s3 mb s3://{bucket}) or fix the store "
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

    def write_if_absent(self, key: str, data: bytes) -> bool:
        """Write ``data`` at ``key`` only if nothing is there (an exclusive create: the
        writer lease, ``store.lease``); False when something is."""
        path = self._path(key)
        try:
            if self._local:
                os.makedirs(os.path.dirname(path), exist_ok=True)
                try:
                    fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
                except FileExistsError:
                    return False
                with os.fdopen(fd, "wb") as fh:
                    fh.write(data)
                return True
            try:
                self.fs.pipe_file(path, data, mode="create")
            except FileExistsError:
                return False
            except OSError as exc:  # s3fs: 412 Precondition Failed on an existing key
                if "PreconditionFailed" in str(exc) or "412" in str(exc) or "ConditionalRequestConflict" in str(exc):
                    return False
                raise
            self.fs.invalidate_cache(path)
            return True
        except OSError as exc:
            raise StoreError(f"cannot create {key!r} in store {self.url!r}: {exc}") from None

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
        key = artifact_key(digest)
        if not self.exists(key):
            self.write_bytes(key, data)
        return digest

    def get_artifact(self, digest: str) -> Any:
        """Load and verify the artifact ``digest`` (IntegrityError if its bytes changed)."""
        return parse_json(self.get_artifact_bytes(digest), artifact_key(digest))

    def get_artifact_bytes(self, digest: str) -> bytes:
        """The verified bytes of the artifact ``digest`` (IntegrityError if they changed)."""
        if not isinstance(digest, str) or not DIGEST_PATTERN.fullmatch(digest):
            raise InvalidInput(f"artifact digest must be 64 lowercase hex characters, got {digest!r}")
        key = artifact_key(digest)
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
        return self.write_json(baseline_key(name), data)

    def load_baseline(self, name: str) -> Optional[dict]:
        """The baseline ``name``, or None when there is none."""
        key = baseline_key(name)
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
        return bytes(retrying(fs, settings, fs.cat_file, path, download=True,
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
    local = "file" in protocols_of(fs)
    try:
        retrying(fs, settings, _atomic_local_write if local else fs.pipe_file, path, data,
                  sent=len(data), what=f"write {what} {text!r}")
    except FileNotFoundError as exc:
        raise StoreError(f"cannot write {what} {text!r}: {exc}") from None
    return sha256_hex(data)


def open_url(url: Union[str, os.PathLike], *, what: str = "file",
             invalid: type = InvalidInput) -> tuple:
    """``(filesystem, path, settings)`` of a user-named file or folder (what the trace sources
    of a monitor list and stat), opened as :func:`read_url` opens one."""
    text = _url_text(url, what, invalid)
    return _open_url(text, what, invalid)


def _open_url(text: str, what: str, invalid: type) -> tuple:
    """``(filesystem, path, settings)`` of one user-named file, opened as a Store opens its
    root (s3://: the same timeouts, options and retry window)."""
    proto = _require_backend(text, what)
    options: dict = {}
    settings = StoreSettings.resolve(text, options)
    base, _ = split_url(text)
    if proto in S3_PROTOCOLS:
        options = s3_options(settings, options)
    from fsspec.core import url_to_fs

    try:
        fs, path = url_to_fs(base, **options)
    except ImportError as exc:
        raise MissingDependency(f"reading {text!r} needs an fsspec backend for {proto!r} "
                                f"({exc}): pip install 'ek-agents[s3]' for s3://") from None
    except ValueError as exc:  # fsspec: unknown protocol
        raise invalid(f"cannot open {what} {text!r}: {exc}") from None
    if proto in S3_PROTOCOLS:
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
