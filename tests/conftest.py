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


#: The longest test files (tens of seconds each: real Prefect servers, flow runs, S3 outages,
#: the fuzz campaign), longest first. They run first: `make test` hands each file whole to one
#: of two xdist workers in this order (``--dist loadfile --no-loadscope-reorder``), so no long
#: file starts last and runs alone while the other worker sits idle.
LONGEST_FIRST = [
    "tests/pipeline/test_prefect_ui.py",
    "tests/pipeline/test_flows.py",
    "tests/pipeline/test_identity_flows.py",
    "tests/pipeline/test_cli_inputs.py",
    "tests/pipeline/test_audit_trust.py",
    "tests/pipeline/test_scale_dask.py",
    "tests/harness/test_store_faults.py",
    "tests/scoring/test_batch_scoring.py",
    "tests/fuzz/test_loaders.py",
    "tests/pipeline/test_cli.py",
    "tests/pipeline/test_cli_local.py",
    "tests/test_docs_site.py",
]


def pytest_collection_modifyitems(items):
    rank = {path: i for i, path in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(rank)))  # stable
