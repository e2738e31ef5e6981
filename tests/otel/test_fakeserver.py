"""The scripted server's opt-in misbehaviour and modes, through the real SDKs: seeded faults
(per model, with recovery), the token bucket, streaming with usage where OpenAI and Anthropic put
it, the endless tool-call loop, the judge, and the ledger of what it billed."""
from __future__ import annotations

import json

import anthropic
import openai
import pytest

from ek_agents_examples.otel.fakefaults import TokenBucket
from ek_agents_examples.otel.fakeopenai import FakeOpenAI


def _ask(c, model: str, marker: str, **kw):
    return c.chat.completions.create(model=model, messages=[{"role": "user", "content": f"[ek:{marker}] go"}], **kw)


def _post(srv, model: str, text: str, **body) -> int:
    """A request through the server's whole answer (rate limit, faults, script), no socket."""
    raw = json.dumps({"model": model, "messages": [{"role": "user", "content": text}], **body})
    return srv.answer("/v1/chat/completions", raw.encode())


def test_seeded_faults_per_model_and_recovery():
    def run(seed: int) -> list:
        srv = FakeOpenAI(seed=seed, fault_rate=0.4, retry_after=0.05)
        got = [_post(srv, "gpt-4o", f"[ek:f{i}.0] go").status for i in range(400)]
        assert srv.counts.requests == 400 and srv.counts.faults == {429: got.count(429)}
        assert srv.counts.answered == got.count(200) == srv.ledger["gpt-4o-2024-08-06"].calls
        srv.stop()
        return got
    a = run(7)
    assert a == run(7) and a != run(8)                 # seeded
    assert 0.4 - 0.075 <= a.count(429) / 400 <= 0.4 + 0.075   # ~3 sd of 40% at n=400
    with FakeOpenAI(fault_rate=1.0) as srv:            # the SDK sees the 429 and its Retry-After
        c = openai.OpenAI(base_url=srv.base_url, api_key="x", max_retries=0)
        with pytest.raises(openai.RateLimitError) as err:
            _ask(c, "gpt-4o", "f0.0")
        assert err.value.response.headers["retry-after"] == "0.05"
        assert err.value.response.headers["retry-after-ms"] == "50"
        assert srv.counts.faults == {429: 1}
    with FakeOpenAI() as srv:
        c = openai.OpenAI(base_url=srv.base_url, api_key="x", max_retries=0)
        srv.set_faults(1.0, status=503, model="gpt-4o-mini")
        _ask(c, "gpt-4o", "o1.0")                       # other models answer
        with pytest.raises(openai.InternalServerError) as err:
            _ask(c, "gpt-4o-mini", "o1.0")
        assert err.value.status_code == 503
        srv.set_faults(0, model="gpt-4o-mini")          # recovered
        _ask(c, "gpt-4o-mini", "o1.0")
        assert srv.counts.per_model["gpt-4o-mini"].faults == 1
        assert srv.counts.per_model["gpt-4o-mini"].answered == 1


def test_token_bucket():
    now = [0.0]
    b = TokenBucket(40, burst=2, clock=lambda: now[0])
    assert b.take() is None and b.take() is None
    r = b.take()
    assert r.status == 429 and r.retry_after == pytest.approx(1 / 40)
    now[0] += 1 / 40
    assert b.take() is None
    with FakeOpenAI(rate_limit=1.0, burst=1) as srv:   # 1 request/s: the second one waits
        c = openai.OpenAI(base_url=srv.base_url, api_key="x", max_retries=0)
        _ask(c, "gpt-4o", "b1.0")
        with pytest.raises(openai.RateLimitError) as err:
            _ask(c, "gpt-4o", "b2.0")
        assert 0 < float(err.value.response.headers["retry-after"]) <= 1.0
        assert (srv.counts.answered, srv.counts.throttled) == (1, 1)


def test_streams_carry_the_usage_the_ledger_billed():
    with FakeOpenAI() as srv:
        c = openai.OpenAI(base_url=srv.base_url, api_key="x", max_retries=0)
        chunks = list(_ask(c, "gpt-4o", "s1.0", stream=True, stream_options={"include_usage": True}))
        calls = [tc for ch in chunks if ch.choices for tc in ch.choices[0].delta.tool_calls or []]
        assert calls[0].function.name == "lookup" and chunks[-1].choices == []
        sent = srv.sent["s1.0"][0]
        assert (chunks[-1].usage.prompt_tokens, chunks[-1].usage.completion_tokens,
                chunks[-1].usage.prompt_tokens_details.cached_tokens) == \
            (sent.input_tokens, sent.output_tokens, sent.cached_input_tokens)
        plain = list(_ask(c, "gpt-4o", "s2.0", stream=True))       # no include_usage: none sent
        assert all(ch.usage is None for ch in plain) and not srv.sent["s2.0"][0].usage_sent
        events = list(c.responses.create(model="gpt-4o-mini", input="[ek:s3.0] go", stream=True))
        assert events[-1].type == "response.completed"
        assert events[-1].response.usage.input_tokens == srv.sent["s3.0"][0].input_tokens
        a = anthropic.Anthropic(base_url=srv.anthropic_base_url, api_key="x", max_retries=0)
        system = [{"type": "text", "text": "plan", "cache_control": {"type": "ephemeral"}}]
        for _ in range(2):
            with a.messages.stream(model="claude-sonnet-4-5", max_tokens=64, system=system,
                                   messages=[{"role": "user", "content": "[ek:s4.0] go"}]) as s:
                m = s.get_final_message()
        first, second = srv.sent["s4.0"]
        assert (first.cache_write_tokens, second.cached_input_tokens) == (2000, 2000)
        assert m.usage.cache_read_input_tokens == 2000 and m.content[0].name == "lookup"
        assert m.usage.input_tokens + 2000 == second.input_tokens
        led = srv.ledger["claude-sonnet-4-5-20250929"]
        assert (led.calls, led.cache_write_tokens, led.cached_input_tokens) == (2, 2000, 2000)
        assert sum(b.calls for b in srv.ledger.values()) == srv.counts.answered == 5


def test_endless_loop_and_judge():
    with FakeOpenAI(loop=True) as srv:
        c = openai.OpenAI(base_url=srv.base_url, api_key="x", max_retries=0)
        msgs = [{"role": "user", "content": "[ek:l1.0] go"}]
        for _ in range(5):
            msg = c.chat.completions.create(model="gpt-4o", messages=msgs).choices[0].message
            assert msg.tool_calls and msg.tool_calls[0].function.name == "lookup"
            msgs += [msg.model_dump(exclude_none=True),
                     {"role": "tool", "tool_call_id": msg.tool_calls[0].id, "content": "v"}]
        srv.set_loop(False)
        srv.set_judge(sensitivity=0.8, specificity=0.9, seed=3)
        out = c.chat.completions.create(   # through the SDK: a JSON verdict
            model="gpt-4o-mini", response_format={"type": "json_object"},
            messages=[{"role": "system", "content": "Return a JSON verdict."},
                      {"role": "user", "content": "[ek:j0.0] answer [truth:PASS]"}])
        assert json.loads(out.choices[0].message.content)["verdict"] == srv.judged[0].verdict
        verdicts = {"PASS": [], "FAIL": []}
        for i in range(800):
            truth = "PASS" if i % 2 else "FAIL"
            ans = _post(srv, "gpt-4o-mini", f"Give a verdict on: answer {i} [truth:{truth}]",
                        response_format={"type": "json_object"})
            doc = json.loads(ans.body)
            verdicts[truth].append(json.loads(doc["choices"][0]["message"]["content"])["verdict"])
        sens = verdicts["PASS"].count("PASS") / 400
        spec = verdicts["FAIL"].count("FAIL") / 400
        assert abs(sens - 0.8) <= 0.06 and abs(spec - 0.9) <= 0.045   # ~3 sd at n=400
        assert [j.truth for j in srv.judged[1:5]] == ["FAIL", "PASS", "FAIL", "PASS"]
        assert [j.verdict for j in srv.judged[1:5]] == \
            [v for pair in zip(verdicts["FAIL"][:2], verdicts["PASS"][:2]) for v in pair]


def test_a_pydantic_ai_judge_with_an_output_type_gets_its_verdict():
    import asyncio
    from typing import Literal

    from pydantic import BaseModel
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    class Verdict(BaseModel):
        verdict: Literal["PASS", "FAIL"]
        rationale: str

    with FakeOpenAI(judge=None) as srv:
        srv.set_judge(sensitivity=1.0, specificity=1.0)
        client = openai.AsyncOpenAI(base_url=srv.base_url, api_key="x", max_retries=0)
        judge = Agent(OpenAIChatModel("gpt-4o-mini", provider=OpenAIProvider(openai_client=client)),
                      output_type=Verdict, instructions="Give your verdict on the answer.")

        async def both():
            return [(await judge.run(f"answer: 42 [truth:{t}]")).output for t in ("PASS", "FAIL")]
        got = asyncio.run(both())
        assert [v.verdict for v in got] == ["PASS", "FAIL"]
        assert [j.truth for j in srv.judged] == ["PASS", "FAIL"]
