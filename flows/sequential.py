"""``sequential-trials``: run a suite batch by batch and stop once the sequential gate decides.

Batch j is trial j of every task, fanned out in chunks like any run's trials; after each batch
the gate looks (Lan-DeMets O'Brien-Fleming alpha spending, ``ek_agents.sequential``) and the
loop ends at the first decided look -- a clear regression or a clear pass -- or after k
batches. The verdict (stopped early or not, why, the trials it cost) becomes the run's gate
document; the manifest and the report say so.
"""
from __future__ import annotations

from typing import Optional

from prefect import flow
from prefect.futures import wait

from ek_agents.pipeline.chunks import TrialRequest
from ek_agents.records.stagecache import GateRef, StageRef
from ek_agents_pipeline.tasks import run_trial_chunk
from ek_agents_pipeline.tasks.sequential import (batch_look, collect_batches, plan_batch,
                                                 sequential_gate)


@flow(name="sequential-trials", persist_result=False)
def sequential_trials_flow(request: TrialRequest, baseline: str, check: Optional[str] = None,
                           tolerance: float = 0.0,
                           priced: bool = False) -> tuple[StageRef, GateRef]:
    """Run batches until the gate against ``baseline`` has decided; ``(episodes, gate)``."""
    looks = 0
    for batch in range(request.k):
        chunks = run_trial_chunk.map(plan_batch(request, batch))
        wait(chunks)
        looks = batch + 1
        if batch_look(request, baseline, looks, check, tolerance, priced)["decision"] != "continue":
            break
    episodes = collect_batches(request, looks)
    verdict = sequential_gate(request.store, request.run_id, episodes, request.tasks, baseline,
                              request.k, check, tolerance, priced)
    return episodes, verdict
