"""The >>> examples in ek_agents.bridge's docstrings run."""
import doctest
import importlib

import pytest

MODULES = ["__init__", "_access", "usage", "messages", "inspect_log", "tau_bench", "deepeval", "agent", "jsonl"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    mod = importlib.import_module("ek_agents.bridge" if name == "__init__" else f"ek_agents.bridge.{name}")
    res = doctest.testmod(mod, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert res.failed == 0
