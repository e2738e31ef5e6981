"""Stored runs made once per session by the library (``run_suite(persist=True)``)."""
import pytest

from .reportkit import make_runs


@pytest.fixture(scope="session")
def stored_runs(tmp_path_factory):
    """``(store root, run ids)`` of real runs of the shop agents, one of them gated."""
    root = str(tmp_path_factory.mktemp("report-store"))
    return root, make_runs(root)
