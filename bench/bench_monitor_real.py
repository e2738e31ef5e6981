"""The monitor end to end at production size: real instrumentation, a real judge endpoint.

``python -m bench.bench_monitor_real [--days 15] [--traces 400] [--labels 40]`` serves, day by
day, ``traces`` requests through the pydantic-ai agent of ``ek_agents_examples.otel`` (its own
instrumentation, behind an application span whose ``app.route`` -- two routes -- is the slice)
against the local OpenAI-compatible server; the agent answers right with probability 0.80 on
days 1-10 and 0.65 from day 11 (the server's script decides, the truth known to this bench
only through the marker the server's judge reads). Each day's spans are written as OTLP/JSON
lines (a new file a day, in one folder: the source), then one monitor window runs with a
lenient judge on the server's judge endpoint (sensitivity 0.90, specificity 0.70), a person's
``labels`` labels are planned and filled from the truth, stored, and the series re-evaluated
(Bonferroni over a 15-window horizon). Printed per day: traces, judged, labels used, raw judge
rate, corrected rate and interval, dollars per corrected success, agent and evaluation dollars,
the alert; then the checks: the alert fires on day 11 or 12 and never on days 2-10; a re-run
of a window makes 0 episodes and 0 judge calls; the agent's dollars per model equal what the
server billed those models, and the evaluation dollars what it billed the judge's model.
"""
from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path

__all__ = ["main"]

JUDGE = "judge-mini"


def main(argv: list | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--days", type=int, default=15)
    ap.add_argument("--traces", type=int, default=400)
    ap.add_argument("--labels", type=int, default=40)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--concurrency", type=int, default=8)
    a = ap.parse_args(argv)

    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    import ek_agents_examples
    from ek_agents.adapters.judge_endpoint import EndpointJudge
    from ek_agents.base import ModelCall
    from ek_agents.cost import dollars
    from ek_agents.monitor import (SeriesOptions, WindowOptions, evaluate_series,
                                   plan_window_labels, run_window, store_window_labels)
    from ek_agents.prices import load_prices
    from ek_agents.store import Store
    from ek_agents_examples.otel import agents, traffic
    from ek_agents_examples.otel.fakejudge import label_as_truth
    from ek_agents_examples.otel.fakeopenai import FakeOpenAI

    tp = TracerProvider()
    trace.set_tracer_provider(tp)
    exp = InMemorySpanExporter()
    tp.add_span_processor(SimpleSpanProcessor(exp))
    tmp = Path(tempfile.mkdtemp(prefix="ek-monitor-bench-"))
    doc = json.loads((Path(ek_agents_examples.__file__).parent / "prices.json").read_text())
    doc[JUDGE] = {"input_cost_per_token": 1e-07, "output_cost_per_token": 4e-07,
                  "cache_read_input_token_cost": 5e-08, "litellm_provider": "openai", "mode": "chat"}
    (tmp / "prices.json").write_text(json.dumps(doc))
    prices = load_prices(str(tmp / "prices.json"))
    src = tmp / "otel"
    src.mkdir()
    store = Store(str(tmp / "store"))
    rng = random.Random(a.seed)
    opts = WindowOptions(slice_attr=traffic.ROUTE_ATTR)
    sopts = SeriesOptions(horizon=a.days)
    alerts: dict = {}
    reruns = []
    agent: dict = {}
    evaluation = 0.0
    t0 = time.perf_counter()
    with FakeOpenAI(seed=a.seed) as srv:
        srv.set_judge(0.90, 0.70, seed=a.seed)
        agents.configure(srv.base_url)
        judge = EndpointJudge(JUDGE, srv.base_url, "The answer gives the looked-up value.")
        for day in range(1, a.days + 1):
            p = 0.80 if day <= 10 else 0.65
            # the server numbers its replies and bills more tokens the higher the number: start
            # each day's numbering afresh, so that a day costs what the first did and the cost
            # check sees the agent, not the server's counter
            srv.requests = 0
            reqs = traffic.day_requests(day, a.traces, p, rng=rng)
            traffic.serve_requests(reqs, concurrency=a.concurrency)
            lines = traffic.otlp_lines(list(exp.get_finished_spans()))
            exp.clear()
            (src / f"traces-{day:02d}.jsonl").write_text("".join(x + "\n" for x in lines))
            wid = f"day{day:02d}"
            rec = run_window(str(src), "prod", store=store, judges=[judge], prices=prices,
                             window_id=wid, options=opts)
            for m, r in rec.agent_per_model.items():
                agent[m] = agent.get(m, 0.0) + r["dollars"]
            evaluation += rec.evaluation_dollars or 0.0
            rows = plan_window_labels(store, "prod", wid, a.labels, seed=day,
                                      path=str(tmp / f"labels-{wid}.jsonl"))
            label_as_truth(rows, tmp / f"labels-{wid}.jsonl")
            store_window_labels(store, "prod", wid, str(tmp / f"labels-{wid}.jsonl"))
            row = evaluate_series(store, "prod", sopts)[-1]
            judged = len(srv.judged)
            again = run_window(str(src), "prod", store=store, judges=[judge], prices=prices,
                               window_id=wid, options=opts)
            reruns.append((again.new_episodes, again.judge_calls, len(srv.judged) - judged))
            alerts[day] = row.alert
            truth = sum(r.right for r in reqs) / len(reqs)
            print(f"day {day:2d} (p {p:.2f}, realised {truth:.3f}): {row.sentence}"
                  + (f"; ALERT: {'; '.join(row.reasons)}" if row.alert else ""), flush=True)
        billed = {m: dollars(ModelCall(m, input_tokens=b.input_tokens,
                                       output_tokens=b.output_tokens,
                                       cached_input_tokens=b.cached_input_tokens,
                                       reasoning_tokens=b.reasoning_tokens), prices[m])
                  for m, b in srv.ledger.items()}
    print(f"({time.perf_counter() - t0:.0f} s; store {tmp})")
    first = min((d for d, x in alerts.items() if x and d > 10), default=None)
    early = [d for d, x in alerts.items() if x and 2 <= d <= 10]
    ok_alert = first in (11, 12) and not early
    ok_rerun = all(r == (0, 0, 0) for r in reruns)
    ok_agent = all(abs(agent[m] - billed[m]) <= 1e-9 * max(1.0, billed[m]) for m in agent)
    ok_eval = abs(evaluation - billed.get(JUDGE, 0.0)) <= 1e-9
    print(f"alert first fires on day {first} (days 2-10 alerting: {early or 'none'}): "
          f"{'ok' if ok_alert else 'FAILED'}")
    print(f"re-runs: {sum(r[0] for r in reruns)} new episodes, {sum(r[1] for r in reruns)} "
          f"judge calls: {'ok' if ok_rerun else 'FAILED'}")
    for m in sorted(agent):
        print(f"agent {m}: ${agent[m]:.6f} reported, ${billed[m]:.6f} billed by the server")
    print(f"evaluation (judge {JUDGE}): ${evaluation:.6f} reported, "
          f"${billed.get(JUDGE, 0.0):.6f} billed: {'ok' if ok_agent and ok_eval else 'FAILED'}")
    return 0 if ok_alert and ok_rerun and ok_agent and ok_eval else 1


if __name__ == "__main__":
    sys.exit(main())
