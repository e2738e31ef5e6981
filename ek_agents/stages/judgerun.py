"""Grading a run's episodes with an endpoint judge, and what the judge itself cost.

A run graded by an LLM judge at an OpenAI-compatible endpoint (``ek-agents run --judge-model
M --judge-base-url U``, the evaluate flow's ``judge`` parameter) names the judge by a
:class:`JudgeSpec` -- model, endpoint, rubric: plain data, so it crosses Prefect as JSON and
is recorded with the run; the judge object is built where the grading happens. The grade
stage asks the judge about each trial's output (with its task's input) instead of checking it
against gold; an errored trial is failed without a call.

Identity: :attr:`JudgeSpec.identity` (model, endpoint, rubric and prompt, the adapter's
``EndpointJudge.identity``) is part of the grade stage's input digest, so a grade is reused
only for the same judge, and it is the run's recorded ``graded_by`` digest
(:meth:`JudgeSpec.graded_by`): the labels commands know the run as judged.

Evaluation cost: each judged episode keeps the judge's call in ``meta["evaluation_calls"]``
(never in its ``cost``: the agent's dollars stay the agent's); :func:`with_evaluation_cost`
adds ``cost.evaluation_dollars`` (None without prices) and ``cost.evaluation_per_model`` to
the run's report, billed at the judge model's rates by ``cost.cost_by_model``, the monitor's
own accounting.
"""
from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Optional

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from ..adapters.judge_endpoint import DEFAULT_RUBRIC, EndpointJudge
from ..base import Cost, Episode, ModelCall, task_table
from ..cost import cost_by_model
from ..errors import InvalidInput
from ..labels import GradedBy

__all__ = ["JudgeSpec", "judge_spec", "run_judge", "judged_episodes", "with_evaluation_cost",
           "evaluation_cost",
           "endpoint_judged", "verdict_problems", "EVALUATION_CALLS", "JUDGE_THREADS", "JUDGE_NAME"]

#: The episode meta key holding the judge's calls on that episode (ModelCall dicts).
EVALUATION_CALLS = "evaluation_calls"
#: Judge calls in flight at once while a run is graded.
JUDGE_THREADS = 8
#: How a run graded by an endpoint judge names it in ``inputs.graded_by.name``.
JUDGE_NAME = "EndpointJudge:"


class JudgeSpec(BaseModel):
    """Which endpoint judge grades a run: plain data (a flow parameter, recorded)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str
    """The judge's model name at the endpoint."""
    base_url: Optional[str] = None
    """The OpenAI-compatible endpoint (None: the SDK's default, ``$OPENAI_BASE_URL``)."""
    rubric: str = DEFAULT_RUBRIC
    """What a PASS is, in a sentence."""

    @field_validator("model", "rubric")
    @classmethod
    def _text(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("must not be empty")
        return v

    def endpoint_judge(self) -> EndpointJudge:
        """The judge object (its key from ``$EK_JUDGE_API_KEY``, else ``$OPENAI_API_KEY``)."""
        key = os.environ.get("EK_JUDGE_API_KEY") or os.environ.get("OPENAI_API_KEY")
        return EndpointJudge(self.model, self.base_url, self.rubric, api_key=key)

    @property
    def identity(self) -> str:
        """sha256 of model, endpoint, rubric and prompt (``EndpointJudge.identity``)."""
        return EndpointJudge(self.model, self.base_url, self.rubric).identity

    def graded_by(self) -> GradedBy:
        """The run's ``inputs.graded_by``: a judge, named by model and endpoint, digested by
        :attr:`identity`."""
        return GradedBy(kind="judge", name=f"{JUDGE_NAME}{self.model}@{self.base_url or 'default'}",
                        digest=self.identity)


def judge_spec(value: Any) -> Optional[JudgeSpec]:
    """A :class:`JudgeSpec` from itself, its JSON form (a dict), or None."""
    if value is None or isinstance(value, JudgeSpec):
        return value
    if isinstance(value, Mapping):
        try:
            return JudgeSpec.model_validate(dict(value))
        except ValidationError as exc:
            raise InvalidInput(f"judge={dict(value)!r:.200}: not a judge ({exc.errors()[0]['loc']}: "
                               f"{exc.errors()[0]['msg']}); give {{model, base_url, rubric}}") from None
    raise InvalidInput(f"judge={value!r:.80}: give {{model, base_url, rubric}} (a JudgeSpec), "
                       "never a callable: a flow parameter crosses Prefect as JSON")


def run_judge(judge: Any, *, check: Optional[str] = None, sequential: bool = False
              ) -> Optional[JudgeSpec]:
    """The run's judge (:func:`judge_spec`), refused beside a checker (a run is graded one way)
    and on a sequentially gated run (its looks grade with the checker as they go)."""
    spec = judge_spec(judge)
    if spec is not None and check is not None:
        raise InvalidInput(f"judge={spec.model!r} and check={check!r}: a run is graded by a judge "
                           "or by a checker, not both; drop one (--judge-model or --check)")
    if spec is not None and sequential:
        raise InvalidInput(f"judge={spec.model!r} with sequential=True: the sequential gate's looks "
                           "grade with a checker; run the judged run without --sequential")
    return spec


def judged_episodes(episodes: Sequence[Episode], tasks: Any, spec: JudgeSpec) -> list[Episode]:
    """Each episode graded by the judge ``spec`` names (PASS: success), its task's input shown
    with the output; the judge's call kept in ``meta["evaluation_calls"]``. An errored
    episode is failed without a call; a judge reply that is no verdict raises
    ``JudgeReplyError``, an endpoint failure ``TransientAgentError``."""
    judge = spec.endpoint_judge()
    table = task_table(tasks)

    def one(ep: Episode) -> Episode:
        if (ep.meta or {}).get("error"):
            return ep.graded(False)
        task = table.get(ep.task_id)
        if task is None:
            raise InvalidInput(f"judge: episode for task {ep.task_id!r} has no task in the suite")
        reply = judge.judge(ep.output, task.input)
        graded = ep.graded(reply.passed)
        if reply.call is not None:
            graded.meta[EVALUATION_CALLS] = [reply.call.to_dict()]
        return graded

    with ThreadPoolExecutor(max_workers=JUDGE_THREADS, thread_name_prefix="ek-judge") as pool:
        return list(pool.map(one, episodes))


def evaluation_cost(calls: Sequence[ModelCall], prices: Optional[Mapping]
                    ) -> tuple[dict, Optional[float]]:
    """The judges' own calls billed at their models' rates: ``(per-model table, dollars)``,
    the dollars None without a price list (0.0 for no call)."""
    table, per = cost_by_model([Episode("judge", cost=Cost.of_calls(calls))] if calls else [],
                               prices)
    return table, (math.fsum(per) if prices is not None else None)


def with_evaluation_cost(report: dict, graded: Sequence[Episode], prices: Optional[Mapping]) -> dict:
    """``report`` with ``cost.evaluation_dollars`` and ``cost.evaluation_per_model`` when some
    graded episode carries the judge's calls (the report as is otherwise); dollars None
    without a price list."""
    calls = [ModelCall.from_dict(c) for ep in graded for c in (ep.meta or {}).get(EVALUATION_CALLS) or ()]
    if not calls:
        return report
    table, dollars = evaluation_cost(calls, prices)
    cost = dict(report.get("cost") or {})
    cost.update(evaluation_dollars=dollars, evaluation_per_model=table)
    return {**report, "cost": cost}


def endpoint_judged(graded_by: Any) -> bool:
    """Whether a run's recorded ``graded_by`` is an endpoint judge's (:meth:`JudgeSpec.graded_by`)."""
    return (getattr(graded_by, "kind", None) == "judge"
            and str(getattr(graded_by, "name", None) or "").startswith(JUDGE_NAME))


def verdict_problems(episodes: Mapping, graded: Mapping) -> list[str]:
    """What keeps an endpoint-judged run's graded document from being its stored episodes with
    the judge's verdicts (an audit takes the recorded verdicts, and asks no judge again): each
    graded episode must equal its stored one but for ``success`` and the judge's calls."""
    def bare(row: Mapping) -> dict:
        meta = {k: v for k, v in (row.get("meta") or {}).items() if k != EVALUATION_CALLS}
        return {**{k: v for k, v in row.items() if k not in ("success", "meta")}, "meta": meta}

    stored, judged = episodes.get("episodes") or [], graded.get("episodes") or []
    if len(stored) != len(judged):
        return [f"graded: {len(judged)} judged episodes for {len(stored)} stored ones"]
    return [f"graded.episodes[{i}]: not the stored episode {e.get('task_id')!r} with a verdict"
            for i, (e, g) in enumerate(zip(stored, judged)) if bare(e) != bare(g)][:20]
