"""Test-wide settings: everything offline, nothing phones home."""
import os

os.environ.setdefault("DO_NOT_TRACK", "1")
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("DEEPEVAL_TELEMETRY_OPT_OUT", "YES")
