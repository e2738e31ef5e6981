"""Settings shared by every pipeline task."""
from __future__ import annotations

from prefect.cache_policies import NO_CACHE

#: Our store caches stage outputs; Prefect neither caches nor persists (no pickle anywhere).
TASK_DEFAULTS = dict(cache_policy=NO_CACHE, persist_result=False)
#: Store I/O can hit a transient network error (S3): retry it, briefly.
IO_RETRIES = dict(retries=2, retry_delay_seconds=[1, 4])
