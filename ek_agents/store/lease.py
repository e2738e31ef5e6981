"""One writer per run: a lease object created exclusively in the store, read, acquired (with a
wait), released and broken.
"""
from __future__ import annotations

import os
import socket
import time
import uuid
from typing import TYPE_CHECKING, Optional

from ..core import canonical_json, shape
from ..errors import ArtifactNotFound, IntegrityError, InvalidInput, RunInUse, StoreError
from .keys import run_prefix, validate_name

if TYPE_CHECKING:  # annotations only: the Store class imports this module
    from . import Store

__all__ = ["Lease", "lease_key", "acquire_lease", "release_lease", "break_lease", "read_lease"]

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
    at: str = ""
    """The store key of the lease document when it is not the run's own
    (:func:`lease_key`): a lease guarding something shared by runs, such as a monitored
    series' ledger."""

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


def read_lease(store: "Store", run_id: str, *, at: str = "") -> Optional[Lease]:
    """The lease held on ``run_id`` (None when nobody writes it); ``at``: the key of a lease
    that is not the run's own (see :attr:`Lease.at`)."""
    try:
        doc = store.read_json(at or lease_key(run_id))
    except ArtifactNotFound:
        return None
    except IntegrityError:  # a lease file that is not one: treat as held by an unknown writer
        return Lease(run_id=run_id, token="?", at=at)
    try:
        return Lease(**{f: doc[f] for f in ("run_id", "token", "host", "pid", "acquired_at")},
                     at=at)
    except (KeyError, TypeError, InvalidInput):
        return Lease(run_id=run_id, token="?", at=at)


def acquire_lease(store: "Store", run_id: str, *, wait_s: float = 0.0,
                  force: bool = False, poll_s: float = 0.2, at: str = "") -> Lease:
    """Take the writer lease of ``run_id``, or raise :class:`~ek_agents.errors.RunInUse`
    naming its holder.

    ``wait_s`` > 0 waits up to that many seconds for the holder to release it; ``force``
    first removes any lease there (explicitly asked: ``--break-lease``). A lease whose holder
    provably writes nothing any more (:meth:`Lease.orphaned`: a dead process of this host, or
    this process after a run whose release failed in an outage) is taken over without asking;
    one of another host is only ever broken explicitly. ``at`` takes the lease at that key
    instead of the run's own (:attr:`Lease.at`), on behalf of ``run_id``.
    """
    lease = Lease(run_id=validate_name(run_id, what="run id"), token=uuid.uuid4().hex,
                  host=socket.gethostname(), pid=os.getpid(), acquired_at=time.time(), at=at)
    key = at or lease_key(run_id)
    what = f"run {run_id!r}" if not at else f"{at!r}"
    if force:
        break_lease(store, run_id, at=at)
    deadline = time.monotonic() + max(0.0, float(wait_s))
    while True:
        if store.write_if_absent(key, _lease_doc(lease)):
            _HELD.add(lease.token)
            return lease
        holder = read_lease(store, run_id, at=at)
        if holder is None:  # released between our attempt and the read: try again
            continue
        if holder.orphaned():
            break_lease(store, run_id, at=at)
            continue
        if time.monotonic() >= deadline:
            stale = " (its process is gone: pass --break-lease / break_lease=True)" if holder.is_stale() else ""
            by = f" (for run {holder.run_id!r})" if at else ""
            raise RunInUse(f"{what} is being written by another process{by}: "
                           f"{holder.describe()}{stale}; wait for it (--wait-lease SECONDS), use "
                           "another run id, or break a stale lease explicitly (--break-lease)")
        time.sleep(poll_s)


def release_lease(store: "Store", lease: Lease) -> bool:
    """Give the lease back (only while it is still ``lease``); whether it was removed. A store
    that fails now leaves the lease behind (False): it is orphaned, and the next run of this
    host takes it over (:func:`acquire_lease`)."""
    _HELD.discard(lease.token)
    try:
        held = read_lease(store, lease.run_id, at=lease.at)
        if held is None or held.token != lease.token:
            return False
        return store.delete(lease.at or lease_key(lease.run_id))
    except StoreError:
        return False


def break_lease(store: "Store", run_id: str, *, at: str = "") -> Optional[Lease]:
    """Remove ``run_id``'s lease (or the one at ``at``) whoever holds it (for a holder that
    died); the broken lease."""
    held = read_lease(store, run_id, at=at)
    if held is not None:
        store.delete(at or lease_key(run_id))
    return held
