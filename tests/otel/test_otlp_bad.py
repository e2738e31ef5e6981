"""Bad traces: typed errors or documented skips, never a hang or a silent zero (bridge.otel,
bridge._otlp). Hand-made OTLP/JSON here tests the parser itself; the producers' own spans are
exercised in test_real_stacks.py."""
from __future__ import annotations

import base64
import json

import pytest

from ek_agents.bridge import episodes_from_otel
from ek_agents.bridge._otlp import MAX_ATTRIBUTE_CHARS
from ek_agents.errors import BridgeError


def _v(x):
    if isinstance(x, bool):
        return {"boolValue": x}
    if isinstance(x, int):
        return {"intValue": str(x)}
    if isinstance(x, float):
        return {"doubleValue": x}
    if isinstance(x, dict) and len(x) == 1 and next(iter(x)).endswith("Value"):
        return x  # already typed (a wrong type on purpose)
    return {"stringValue": x}


def span(trace: int, sid: int, parent=None, name="s", start=0, **attrs) -> dict:
    return {"traceId": f"{trace:032x}", "spanId": f"{sid:016x}",
            "parentSpanId": "" if parent is None else f"{parent:016x}", "name": name,
            "kind": 1, "startTimeUnixNano": str(start), "endTimeUnixNano": str(start + 1),
            "attributes": [{"key": k.replace("__", "."), "value": _v(v)} for k, v in attrs.items()],
            "status": {}}


def chat(trace, sid, parent=None, start=0, model="gpt-4o", inp=100, out=10, **more):
    return span(trace, sid, parent, f"chat {model}", start, **{
        "gen_ai.operation.name": "chat", "gen_ai.response.model": model,
        "gen_ai.usage.input_tokens": inp, "gen_ai.usage.output_tokens": out, **more})


def tool(trace, sid, parent=None, start=0, name="lookup", args='{"k": 1}', result="r", **more):
    return span(trace, sid, parent, f"execute_tool {name}", start, **{
        "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name,
        "gen_ai.tool.call.arguments": args, "gen_ai.tool.call.result": result, **more})


def line(spans: list) -> str:
    return json.dumps({"resourceSpans": [{"resource": {}, "scopeSpans": [
        {"scope": {"name": "test"}, "spans": spans}]}]})


def write(tmp_path, *lines, name="t.jsonl"):
    p = tmp_path / name
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return p


def _b64(doc_line: str) -> str:
    doc = json.loads(doc_line)
    for rs in doc["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            for sp in ss["spans"]:
                for k in ("traceId", "spanId", "parentSpanId"):
                    if sp[k]:
                        sp[k] = base64.b64encode(bytes.fromhex(sp[k])).decode()
    return json.dumps(doc)


def test_hex_and_base64_ids_read_the_same(tmp_path):
    good = line([chat(1, 1, start=1), tool(1, 2, start=2), chat(1, 3, start=3, model="gpt-4o-mini")])
    a = episodes_from_otel(write(tmp_path, good, name="hex.jsonl"))
    b = episodes_from_otel(write(tmp_path, _b64(good), name="b64.jsonl"))
    assert [e.trajectory for e in a] == [e.trajectory for e in b]
    assert [e.cost for e in a] == [e.cost for e in b]
    assert [c.model for c in a[0].cost.calls] == ["gpt-4o", "gpt-4o-mini"]
    assert a[0].trajectory.calls == (("lookup", {"k": 1}),)
    assert a[0].task_id == f"{1:032x}"  # no ek.task_id: the trace id names the episode


def test_a_truncated_line_is_an_error_naming_it_or_a_counted_skip(tmp_path):
    good = line([chat(1, 1)])
    p = write(tmp_path, good, line([chat(2, 1)])[:57])
    with pytest.raises(BridgeError, match=r"t\.jsonl:2.*skip_bad_lines"):
        episodes_from_otel(p)
    eps = episodes_from_otel(p, skip_bad_lines=True)
    assert len(eps) == 1 and eps[0].meta["otel"]["skipped_lines"] == 1


def test_orphans_are_roots_and_cycles_are_cut_counted(tmp_path):
    orphan = [chat(1, 1, parent=99), tool(1, 2, parent=98, start=1)]
    cycle = [span(2, 1, parent=2), span(2, 2, parent=1), chat(2, 3, parent=1, start=5),
             chat(2, 4, parent=3, start=6)]  # 4 nested in 3: one call
    eps = {e.task_id[-1]: e for e in episodes_from_otel(write(tmp_path, line(orphan + cycle)))}
    assert eps["1"].meta["otel"]["orphans"] == 2 and len(eps["1"].cost.calls) == 1
    assert eps["1"].trajectory.tools == ("lookup",)
    assert eps["2"].meta["otel"]["cycles"] == 1 and len(eps["2"].cost.calls) == 1
    assert eps["2"].meta["otel"]["nested_calls"] == 1


def test_a_huge_attribute_is_cut_and_said_so(tmp_path):
    big = "x" * (3 * MAX_ATTRIBUTE_CHARS)
    ep, = episodes_from_otel(write(tmp_path, line([tool(1, 1, result=big)])))
    assert len(ep.trajectory[0].observation) == MAX_ATTRIBUTE_CHARS
    assert ep.meta["otel"]["truncated"] == 1


@pytest.mark.parametrize("bad, match", [
    (chat(1, 1, **{"gen_ai.usage.input_tokens": {"intValue": "lots"}}), "expected an integer"),
    (chat(1, 1, **{"gen_ai.usage.input_tokens": -3}), "non-negative integer"),
    (chat(1, 1, **{"gen_ai.usage.output_tokens": "ten"}), "non-negative integer"),
    (chat(1, 1, **{"gen_ai.request.model": {"stringValue": 5}}), "stringValue must be a string"),
    (chat(1, 1, **{"gen_ai.system": {"fooValue": 1}}), "unknown attribute value kind"),
    ({**chat(1, 1), "traceId": "abc"}, "neither 32 hex digits nor the base64"),
    ({**chat(1, 1), "spanId": 12}, "spanId must be a string"),
    ({**chat(1, 1), "startTimeUnixNano": "soon"}, "expected an integer"),
    ({**chat(1, 1), "attributes": {"a": 1}}, "attributes must be a list"),
])
def test_wrong_types_are_typed_errors_naming_the_span(tmp_path, bad, match):
    with pytest.raises(BridgeError, match=match):
        episodes_from_otel(write(tmp_path, line([bad])))


@pytest.mark.parametrize("op", [{"kvlistValue": {"values": [{"key": "k", "value": {"stringValue": "chat"}}]}},
                                {"arrayValue": {"values": [{"stringValue": "chat"}]}}, 7])
def test_an_operation_name_that_is_not_a_string_names_no_operation(tmp_path, op):
    odd = span(1, 2, 1, "odd", 1, **{"gen_ai.operation.name": op})
    ep, = episodes_from_otel(write(tmp_path, line([chat(1, 1), odd])))
    assert len(ep.cost.calls) == 1 and not ep.trajectory.steps


def test_not_otlp_and_bad_arguments(tmp_path):
    with pytest.raises(BridgeError, match="resourceSpans"):
        episodes_from_otel(write(tmp_path, json.dumps({"spans": []})))
    with pytest.raises(BridgeError, match="group_by"):
        episodes_from_otel(write(tmp_path, line([chat(1, 1)])), group_by="")
    ep, = episodes_from_otel(write(tmp_path, line([tool(1, 1, args="{not json")])))
    assert ep.trajectory[0].args == "{not json" and "not valid JSON" in ep.trajectory[0].error


def test_many_spans_bounded_per_episode_and_grouped_by_attribute(tmp_path):
    # 20,000 spans over 200 traces read fine; one group over max_spans is a typed error
    lines = [line([chat(t, i + 1, start=i, **{"session.id": f"s{t % 7}"}) for i in range(100)])
             for t in range(1, 201)]
    p = write(tmp_path, *lines)
    eps = episodes_from_otel(p)
    assert len(eps) == 200 and all(len(e.cost.calls) == 100 for e in eps)
    by_session = episodes_from_otel(p, group_by="session.id")
    assert sorted(e.task_id for e in by_session) == [f"s{i}" for i in range(7)]
    assert sum(len(e.cost.calls) for e in by_session) == 20_000
    with pytest.raises(BridgeError, match="max_spans=1000"):
        episodes_from_otel(p, group_by="session.id", max_spans=1000)


def test_duplicate_spans_once_and_agent_aggregates_never_billed(tmp_path):
    spans = [span(1, 1, name="invoke_agent a", **{"gen_ai.operation.name": "invoke_agent",
                                                  "gen_ai.aggregated_usage.input_tokens": 300,
                                                  "gen_ai.usage.input_tokens": 300,
                                                  "gen_ai.request.model": "gpt-4o"}),
             chat(1, 2, parent=1, start=1), chat(1, 3, parent=1, start=2, inp=200)]
    ep, = episodes_from_otel(write(tmp_path, line(spans), line(spans[1:2])))  # span 2 twice
    assert ep.cost.input_tokens == 300 and len(ep.cost.calls) == 2
    assert ep.meta["otel"]["duplicate_spans"] == 1


def test_openinference_keys_and_older_conventions(tmp_path):
    oi = span(1, 1, name="response", **{"openinference.span.kind": "LLM",
                                        "llm.model_name": "gpt-4o-mini", "llm.provider": "openai",
                                        "llm.token_count.prompt": 50, "llm.token_count.completion": 9,
                                        "llm.token_count.prompt_details.cache_read": 20,
                                        "llm.token_count.completion_details.reasoning": 4})
    old = span(2, 1, name="chat gpt-4o", **{"gen_ai.system": "openai", "gen_ai.request.model": "gpt-4o",
                                            "gen_ai.usage.prompt_tokens": 70,
                                            "gen_ai.usage.completion_tokens": 5})
    anthropic = chat(3, 1, model="claude-x", inp=10, **{"gen_ai.usage.cache_read.input_tokens": 100,
                                                       "gen_ai.usage.cache_creation.input_tokens": 50})
    a, b, c = episodes_from_otel(write(tmp_path, line([oi]), line([old]), line([anthropic])))
    ca, = a.cost.calls
    assert (ca.model, ca.provider, ca.input_tokens, ca.cached_input_tokens, ca.reasoning_tokens,
            ca.cached_known) == ("gpt-4o-mini", "openai", 50, 20, 4, True)
    cb, = b.cost.calls
    assert (cb.model, cb.provider, cb.input_tokens, cb.output_tokens, cb.cached_known) == \
        ("gpt-4o", "openai", 70, 5, False)
    cc, = c.cost.calls  # input reported without its cache parts: they are added
    assert (cc.input_tokens, cc.cached_input_tokens, cc.cache_write_tokens) == (160, 100, 50)


def test_tool_calls_from_older_message_conventions(tmp_path):
    # no tool spans: the steps come from the model calls' messages, in three older spellings
    flat = [chat(1, 1, start=1, **{"gen_ai.completion.0.tool_calls.0.name": "lookup",
                                   "gen_ai.completion.0.tool_calls.0.arguments": '{"k": 2}',
                                   "gen_ai.completion.0.tool_calls.0.id": "c1"}),
            chat(1, 2, start=2, **{"gen_ai.prompt.0.role": "user", "gen_ai.prompt.0.content": "q",
                                   "gen_ai.prompt.1.role": "tool", "gen_ai.prompt.1.tool_call_id": "c1",
                                   "gen_ai.prompt.1.content": "two"})]
    first = chat(2, 1, start=1)
    first["events"] = [{"name": "gen_ai.choice", "timeUnixNano": "1", "attributes": [
        {"key": "message", "value": {"stringValue": json.dumps(
            {"tool_calls": [{"id": "c9", "type": "function",
                             "function": {"name": "convert", "arguments": '{"amount": 3}'}}]})}}]}]
    second = chat(2, 2, start=2)
    second["events"] = [{"name": "gen_ai.tool.message", "timeUnixNano": "2", "attributes": [
        {"key": "id", "value": {"stringValue": "c9"}}, {"key": "content", "value": {"stringValue": "2.70"}}]}]
    a, b = episodes_from_otel(write(tmp_path, line(flat), line([first, second])))
    assert [(s.tool, s.args, s.observation) for s in a.trajectory] == [("lookup", {"k": 2}, "two")]
    assert [(s.tool, s.args, s.observation) for s in b.trajectory] == [("convert", {"amount": 3}, "2.70")]


def test_one_pretty_printed_document_reads_like_its_lines(tmp_path):
    doc = json.loads(line([chat(1, 1), tool(1, 2, start=1)]))
    pretty = tmp_path / "pretty.json"
    pretty.write_text(json.dumps(doc, indent=2))
    a, = episodes_from_otel(pretty)
    b, = episodes_from_otel(write(tmp_path, line([chat(1, 1), tool(1, 2, start=1)])))
    assert (a.trajectory, a.cost) == (b.trajectory, b.cost)


def test_repeated_spans_and_tool_call_ids_are_kept_once_and_counted(tmp_path):
    """A tool call asked for twice under one id (two model calls repeating it) is one step, and
    the read says how many repeats it skipped; a repeated span counts in Ingest.duplicates,
    which every episode of the read carries as meta["otel"]["duplicates"]."""
    asks = {"gen_ai.completion.0.tool_calls.0.name": "lookup",
            "gen_ai.completion.0.tool_calls.0.arguments": '{"k": 2}',
            "gen_ai.completion.0.tool_calls.0.id": "c1"}
    first = [chat(1, 1, start=1, **asks), chat(1, 2, start=2, **asks)]
    other = [chat(2, 1, start=3)]
    a, b = episodes_from_otel(write(tmp_path, line(first), line(other), line(other)))
    assert [s.tool for s in a.trajectory] == ["lookup"]
    assert a.meta["otel"]["duplicate_tool_calls"] == 1 and b.meta["otel"]["duplicate_tool_calls"] == 0
    assert b.meta["otel"]["duplicate_spans"] == 1
    assert a.meta["otel"]["duplicates"] == b.meta["otel"]["duplicates"] == 1


def test_what_a_read_kept_once_reaches_the_report(tmp_path, capsys):
    from ek_agents.cli import main

    asks = {"gen_ai.completion.0.tool_calls.0.name": "lookup",
            "gen_ai.completion.0.tool_calls.0.arguments": '{"k": 2}',
            "gen_ai.completion.0.tool_calls.0.id": "c1", "ek.task_id": "t1", "ek.trial": 0}
    spans = [chat(1, 1, start=1, **asks), chat(1, 2, start=2, **asks)]
    path = write(tmp_path, line(spans), line(spans[:1]))
    store, suite = str(tmp_path / "st"), tmp_path / "suite.jsonl"
    suite.write_text(json.dumps({"task_id": "t1", "gold": "x", "checker": "output"}) + "\n")
    assert main(["ingest", "otlp", str(path), "--suite", str(suite), "--store", store,
                 "--run-id", "dup"]) == 0
    capsys.readouterr()
    assert main(["report", "dup", "--json", "--store", store]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["detail"]["otel_read"] == {"duplicates": 1, "duplicate_tool_calls": 1}
    html = tmp_path / "r.html"
    assert main(["report", "dup", "--html", str(html), "--store", store]) == 0
    assert main(["report", "dup", "--store", store]) == 0
    said = "OpenTelemetry read: 1 repeated span(s) kept once; 1 repeated tool call id(s) kept once"
    assert said in capsys.readouterr().out and said in html.read_text()
