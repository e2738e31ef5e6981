"""Store settings: timeouts, retries and S3 options, from the store URL's query and the
environment.
"""
from __future__ import annotations

import dataclasses
import math
import os
from typing import Any
from urllib.parse import parse_qsl

from ..errors import InvalidInput, did_you_mean

__all__ = ["StoreSettings"]

#: The URL schemes served by s3fs.
S3_PROTOCOLS = ("s3", "s3a")



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


def split_url(url: str) -> tuple[str, str]:
    """``(url without its query, query)``; only network URLs (s3://) take options."""
    proto = url.split("://", 1)[0].lower() if "://" in url else "file"
    if proto in S3_PROTOCOLS and "?" in url:
        base, query = url.split("?", 1)
        return base, query
    return url, ""


def _url_query(url: str) -> dict:
    base, query = split_url(url)
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


def s3_options(settings: StoreSettings, options: dict) -> dict:
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

def protocols_of(fs: Any) -> tuple:
    p = fs.protocol
    return (p,) if isinstance(p, str) else tuple(p)
