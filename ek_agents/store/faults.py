"""A storage backend's failures, classified (timeout, unreachable, access denied, missing bucket,
busy) into the ``errors`` tree with a message naming the endpoint and the fix, and retried with
backoff where a retry can help.
"""
from __future__ import annotations

import math
import random
import time
from collections.abc import Callable
from typing import Any, Optional

from ..errors import (BucketNotFound, EkAgentsError, StoreAccessDenied, StoreError, StoreTimeout,
                     StoreUnreachable, exception_chain)
from .settings import StoreSettings, protocols_of

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


def _brief(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:200] if text else ''}".rstrip(": ")


def _classify(exc: BaseException) -> Optional[tuple]:
    """``(StoreError subclass or _NOT_FOUND, the underlying error)`` for a storage failure,
    None for anything else (a bug or bad input: re-raised as it is).

    botocore / aiohttp exceptions are recognised by class name (and S3 error code), so this
    module imports neither (``import ek_agents`` stays light, and local stores need no boto).
    """
    chain = list(exception_chain(exc))
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


def endpoint_of(fs: Any) -> str:
    url = getattr(fs, "endpoint_url", None) or (getattr(fs, "client_kwargs", None) or {}).get(
        "endpoint_url")
    if url:
        return str(url)
    return "AWS S3" if "s3" in protocols_of(fs) else "the local filesystem"


def _typed(kind: type, cause: BaseException, what: str, fs: Any, settings: StoreSettings,
           attempts: int, elapsed: float) -> StoreError:
    tried = f"; {attempts} attempts over {elapsed:.1f} s" if attempts > 1 else ""
    where = endpoint_of(fs)
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


def retrying(fs: Any, settings: StoreSettings, fn: Callable, *args: Any, what: str,
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
    where = endpoint_of(fs)
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
