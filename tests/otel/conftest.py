"""The real rig: one SDK TracerProvider for the session (an in-memory exporter keeps every span
so the tests can also write them as OTLP/JSON), and the scripted OpenAI-compatible server."""
from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("opentelemetry.sdk.trace")

from opentelemetry import trace  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402

import ek_agents_examples  # noqa: E402
from ek_agents.prices import load_prices  # noqa: E402
from ek_agents_examples.otel import agents  # noqa: E402
from ek_agents_examples.otel.fakeopenai import FakeOpenAI  # noqa: E402

_EXPORTER = InMemorySpanExporter()


def _provider() -> TracerProvider:
    got = trace.get_tracer_provider()
    if isinstance(got, TracerProvider):
        return got
    tp = TracerProvider()
    trace.set_tracer_provider(tp)
    return trace.get_tracer_provider()


_provider().add_span_processor(SimpleSpanProcessor(_EXPORTER))


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    _EXPORTER.clear()
    return _EXPORTER


@pytest.fixture(scope="module")
def server():
    with FakeOpenAI() as srv:
        agents.configure(srv.base_url)
        yield srv


@pytest.fixture(scope="session")
def prices() -> dict:
    return load_prices(Path(ek_agents_examples.__file__).parent / "prices.json")
