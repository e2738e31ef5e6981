"""Serve the ek-agents deployments from this process (single box, no work pool needed).

    PREFECT_API_URL=http://127.0.0.1:4200/api python deployments/serve.py
    prefect deployment run 'evaluate-agent/manual-served' -p suite=examples/shop/suite.yaml \\
        -p agent=examples.shop.agents:small_agent -p k=4 --watch

The same four deployments as ``prefect.yaml``, under names ending in ``-served``:
``evaluate-agent/nightly-served`` (cron 03:00 UTC), ``evaluate-agent/manual-served``
(parameters at trigger time), ``audit-run/audit-served`` (cron 03:30 UTC) and
``promote-baseline/promote-served`` (run_id and name required). The suffix keeps them apart
from the work-pool deployments ``prefect deploy`` makes of ``prefect.yaml``: serving a
deployment under the same flow and name rewrites that deployment in place (a hybrid with the
work pool's pull steps and the server's process), and its next run crashed. ``--only NAME``
(``nightly``, ``manual``, ``audit``, ``promote``) serves just those; each flow run runs in a
subprocess.
"""
from __future__ import annotations

import argparse
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


#: Suffix of every served deployment's name: never one of prefect.yaml's names.
SERVED_SUFFIX = "-served"


def deployments() -> dict:
    """name -> a ``RunnerDeployment`` named ``<name>-served`` (built, not applied)."""
    from prefect.schedules import Cron

    from ek_agents_pipeline.flows import audit_run, evaluate_agent, promote_baseline

    nightly = dict(suite="examples/shop/suite.yaml", agent="examples.shop.agents:small_agent",
                   k=4, prices="examples/prices.json", baseline="shop-small",
                   seed=None)  # seed from each night's scheduled start: every night draws afresh
    return {
        "nightly": evaluate_agent.to_deployment(name="nightly" + SERVED_SUFFIX, cron="0 3 * * *",
                                                parameters=nightly, tags=["ek-agents", "nightly"]),
        "manual": evaluate_agent.to_deployment(name="manual" + SERVED_SUFFIX, parameters={"k": 1},
                                               tags=["ek-agents", "manual"]),
        # no default run_id/baseline (one would override the other); the schedule audits the baseline
        "audit": audit_run.to_deployment(name="audit" + SERVED_SUFFIX, schedules=[Cron(
            "30 3 * * *", timezone="UTC", parameters={"baseline": "shop-small"})],
                                         tags=["ek-agents", "audit"]),
        "promote": promote_baseline.to_deployment(name="promote" + SERVED_SUFFIX,
                                                  tags=["ek-agents", "promote"]),
    }


def main(argv: list | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", action="append", choices=("nightly", "manual", "audit", "promote"),
                    help="serve only these deployments (repeatable)")
    args = ap.parse_args(argv)
    os.chdir(ROOT)  # relative suite/price paths and agent imports resolve from the checkout
    sys.path.insert(0, ROOT)
    from prefect import serve

    chosen = deployments()
    serve(*[d for name, d in chosen.items() if not args.only or name in args.only])


if __name__ == "__main__":
    main()
