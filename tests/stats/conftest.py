"""Fixtures shared by the stats tests: LiteLLM as the reference the cost model is checked
against (its bundled catalog: tests/conftest.py sets LITELLM_LOCAL_MODEL_COST_MAP)."""
import warnings

import pytest

from ek_agents.prices import load_prices


@pytest.fixture(scope="session")
def litellm_prices():
    """LiteLLM's bundled catalog loaded as ek-agents prices."""
    litellm = pytest.importorskip("litellm")
    with warnings.catch_warnings():  # the catalog's few chat models without an input rate
        warnings.simplefilter("ignore", UserWarning)
        return load_prices(litellm.model_cost)


@pytest.fixture(scope="session")
def litellm_usage():
    """``usage(prompt, completion, cached=0, write=0, reasoning=0)``: LiteLLM's ``Usage`` of a
    call with those token counts (what its ``cost_per_token(usage_object=...)`` reads)."""
    pytest.importorskip("litellm")
    from litellm.types.utils import CompletionTokensDetailsWrapper, PromptTokensDetailsWrapper, Usage

    def usage(pt, ct, cached=0, write=0, reasoning=0):
        kw = {}
        if cached or write:
            kw["prompt_tokens_details"] = PromptTokensDetailsWrapper(cached_tokens=cached,
                                                                     cache_creation_tokens=write)
        if reasoning:
            kw["completion_tokens_details"] = CompletionTokensDetailsWrapper(reasoning_tokens=reasoning)
        return Usage(prompt_tokens=pt, completion_tokens=ct, total_tokens=pt + ct, **kw)

    return usage
