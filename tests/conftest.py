"""Test-wide settings: everything offline, nothing phones home."""
import os

os.environ.setdefault("DO_NOT_TRACK", "1")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("DEEPEVAL_TELEMETRY_OPT_OUT", "YES")

try:  # property tests: no flaky deadlines on a loaded 2-core CI box; reproducible examples in CI
    from hypothesis import settings as _hyp_settings

    _hyp_settings.register_profile("ek", deadline=None, derandomize=bool(os.environ.get("CI")))
    _hyp_settings.load_profile("ek")
except ImportError:  # pragma: no cover - hypothesis is a dev dependency
    pass
