"""Serve the ek-agents deployments from this process (single box, no work pool needed).

    PREFECT_API_URL=http://127.0.0.1:4200/api python deployments/serve.py
    prefect deployment run 'evaluate-agent/manual' -p suite=examples/shop/suite.yaml \\
        -p agent=examples.shop.agents:small_agent -p k=4 --watch

The same three deployments as ``prefect.yaml``: ``evaluate-agent/nightly`` (cron 03:00 UTC),
``evaluate-agent/manual`` (parameters at trigger time) and ``audit-run/audit``. ``--only NAME``
serves just one of them (the tests serve ``manual``); each flow run runs in a subprocess.
"""
from __future__ import annotations

import argparse
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def deployments() -> dict:
    """name -> a ``RunnerDeployment`` (built, not applied)."""
    from prefect.schedules import Cron

    from ek_agents_pipeline.flows import audit_run, evaluate_agent

    nightly = dict(suite="examples/shop/suite.yaml", agent="examples.shop.agents:small_agent",
                   k=4, prices="examples/prices.json", baseline="shop-small",
                   seed=None)  # seed from each night's scheduled start: every night draws afresh
    return {
        "nightly": evaluate_agent.to_deployment(name="nightly", cron="0 3 * * *", parameters=nightly,
                                                tags=["ek-agents", "nightly"]),
        "manual": evaluate_agent.to_deployment(name="manual", parameters={"k": 1},
                                               tags=["ek-agents", "manual"]),
        # no default run_id/baseline (one would override the other); the schedule audits the baseline
        "audit": audit_run.to_deployment(name="audit", schedules=[Cron(
            "30 3 * * *", timezone="UTC", parameters={"baseline": "shop-small"})],
                                         tags=["ek-agents", "audit"]),
    }


def main(argv: list | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", action="append", choices=("nightly", "manual", "audit"),
                    help="serve only these deployments (repeatable)")
    args = ap.parse_args(argv)
    os.chdir(ROOT)  # relative suite/price paths and agent imports resolve from the checkout
    sys.path.insert(0, ROOT)
    from prefect import serve

    chosen = deployments()
    serve(*[d for name, d in chosen.items() if not args.only or name in args.only])


if __name__ == "__main__":
    main()
