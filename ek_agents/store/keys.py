"""The artifact layout: every store key and prefix ek-agents writes (``runs/...``,
``artifacts/...``, ``cache/...``, ``baselines/...``, ``reports/...``) and the name rules that
keep a key inside the store. Nobody outside the store spells a key.
"""
from __future__ import annotations

import base64
import functools
import hashlib
import re

from typing import Any, Optional

from ..errors import InvalidInput

__all__ = ["validate_name", "sha256_hex", "episode_key", "run_key", "run_file_key", "report_key", "task_key",
           "run_prefix", "episodes_prefix", "cache_key", "artifact_key", "baseline_key",
           "segments_prefix", "segment_key", "segment_sha256", "segment_index_prefix",
           "segment_index_key"]

NAME_PATTERN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._@+=,-]{0,199}")
# Windows device names, any case, with or without an extension (CON, nul.json, com1.x.y)
RESERVED_NAMES = re.compile(r"(?i)(CON|PRN|AUX|NUL|COM[0-9\u00b9\u00b2\u00b3]|LPT[0-9\u00b9\u00b2\u00b3])(\..*)?")
DIGEST_PATTERN = re.compile(r"[0-9a-f]{64}")

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
    if NAME_PATTERN.fullmatch(task_id):
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
    return f"runs/{validate_name(run_id)}/episodes/{task_key(task_id)}/{trial}.json"


@functools.lru_cache(maxsize=1 << 16)
def _trials_folder(run_id: str, task_id: str) -> str:
    """:func:`episode_key`'s folder of one task's trials, the names checked once (a run's
    ``k`` trials of a task share it; an invalid name raises, and is not cached)."""
    return f"runs/{validate_name(run_id)}/episodes/{task_key(task_id)}"


def run_key(run_id: str, name: str) -> str:
    """Store key of a run's document ``name``: ``runs/<run_id>/<name>.json``.

    >>> run_key("r1", "manifest")
    'runs/r1/manifest.json'
    """
    return f"{run_prefix(run_id)}/{name}.json"


def run_file_key(run_id: str, filename: str) -> str:
    """Store key of a file a run keeps beside its documents: ``runs/<run_id>/<filename>``
    (``filename`` a safe name with its extension, e.g. ``report.html``).

    >>> run_file_key("r1", "report.html")
    'runs/r1/report.html'
    """
    return f"{run_prefix(run_id)}/{validate_name(filename, what='run file name')}"


def run_prefix(run_id: str) -> str:
    """Store prefix of everything a run wrote: ``runs/<run_id>``."""
    return f"runs/{validate_name(run_id, what='run id')}"


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
    ``runs/<run_id>/segments/<sha256>.jsonl.zst`` (:mod:`ek_agents.records.segments`).

    >>> segment_key("r1", "ab" * 32)[:31]
    'runs/r1/segments/ababababababab'
    """
    if not (isinstance(sha256, str) and DIGEST_PATTERN.fullmatch(sha256)):
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
    return sha if DIGEST_PATTERN.fullmatch(sha) else None


def segment_index_prefix(run_id: str) -> str:
    """Store prefix of a run's segment index: ``runs/<run_id>/segment-index``."""
    return f"{run_prefix(run_id)}/segment-index"


def segment_index_key(run_id: str, writer: str) -> str:
    """Store key of one writer's part of a run's segment index:
    ``runs/<run_id>/segment-index/<writer>.json``.

    >>> segment_index_key("r1", "w1")
    'runs/r1/segment-index/w1.json'
    """
    return f"{segment_index_prefix(run_id)}/{validate_name(writer, what='segment writer')}.json"


def cache_key(stage: str, digest: str) -> str:
    """Store key of the stage cache's index entry: ``cache/<stage>/<input digest>.json``."""
    return f"cache/{validate_name(stage, what='stage')}/{validate_name(digest, what='digest')}.json"


def artifact_key(sha256: str) -> str:
    """Store key of a content-addressed artifact: ``artifacts/<sha256>.json``."""
    return f"artifacts/{sha256}.json"


def baseline_key(name: str) -> str:
    """Store key of a named baseline: ``baselines/<name>.json``.

    >>> baseline_key("main")
    'baselines/main.json'
    """
    return f"baselines/{validate_name(name, what='baseline name')}.json"


def report_key(name: str) -> str:
    """Store key of a report comparing runs: ``reports/<name>.html`` (e.g. the demo's).

    >>> report_key("demo")
    'reports/demo.html'
    """
    return f"reports/{validate_name(name, what='report name')}.html"


def validate_name(name: Any, *, what: str = "name") -> str:
    """Return ``name`` if it is a safe run id / baseline name, else raise InvalidInput.

    Refused: empty, ``/``, ``..``, absolute paths, anything outside ``[A-Za-z0-9._@+=,-]``,
    a name ending in ``.`` and Windows-reserved device names (``CON``, ``nul.json``,
    ``COM1``...: a store must be copyable to any filesystem).
    """
    if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name) or name in (".", ".."):
        raise InvalidInput(
            f"invalid {what} {name!r}: use letters, digits and . _ - @ + = , (no '/', no "
            "'..', no absolute path), starting with a letter, digit or '_'")
    if name.endswith("."):
        raise InvalidInput(f"invalid {what} {name!r}: a name may not end with '.' (Windows "
                           f"drops it); use {name.rstrip('.') or 'another name'!r}")
    if RESERVED_NAMES.fullmatch(name):
        raise InvalidInput(f"invalid {what} {name!r}: {name.split('.')[0].upper()} is a "
                           "reserved device name on Windows; pick another name (e.g. add a "
                           "suffix: '" + name.split('.')[0] + "-1')")
    return name
