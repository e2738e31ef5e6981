"""Seeded, simulated tool-using agents for the shop world (no model is called).

Each agent is ``agent(task, *, seed) -> Episode``: it stands in for an LLM that reads the
task, plans tool calls and answers. With a per-task probability it follows the right plan
(the task's gold ``calls``); otherwise it makes one of the mistakes real tool-using models
make -- a wrong order id, a wrong argument (refunding the whole order instead of one item),
a skipped step, a repeated non-idempotent call, a policy violation, a made-up answer --
sometimes noticing a tool error and recovering. Every call really runs against a
:class:`~examples.shop.world.ShopEnv`, so the final state is what the checker grades.

Token usage follows the transcript: every turn re-sends the system prompt, the tool
schemas and the growing history; past 1024 prompt tokens most turns hit the prompt cache
(billed at the cached rate). Prices are in ``examples/prices.json``.

==========================================  ========================  ===============
agent                                       model                     success (about)
==========================================  ========================  ===============
``examples.shop.agents:small_agent``        gpt-4o-mini-2024-07-18    0.6
``examples.shop.agents:large_agent``        gpt-4o-2024-08-06         0.85
``examples.shop.agents:degraded_agent``     gpt-4o-mini-2024-07-18    0.35
==========================================  ========================  ===============

Deterministic: the same task and seed give the same episode (the RNG is seeded with
``seed ^ sha256(task_id)``, never Python's salted ``hash``); called without a seed, an agent
draws one and records it in ``episode.run.seed``.

>>> from ek_agents.suite import load_suite
>>> from examples.shop.world import SUITE_PATH
>>> task = load_suite(SUITE_PATH).task("refund-01")
>>> large_agent(task, seed=1) == large_agent(task, seed=1)
True
>>> large_agent(task, seed=1).run.model
'gpt-4o-2024-08-06'
"""
from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
import math
import random
from typing import Any, Optional

from ek_agents.base import Cost, Episode, RunProvenance, TaskSpec, Trajectory
from ek_agents.errors import InvalidInput

from .world import CANCEL_REASONS, ORDER_STATUSES, SUITE_VERSION, ShopEnv, load_db, read_path

__all__ = ["Profile", "SimulatedAgent", "small_agent", "large_agent", "degraded_agent",
           "oracle_agent", "SCAFFOLD", "PROFILES"]

#: The scaffold id every example agent records (same prompt format and tools).
SCAFFOLD = "examples-shop-v1"
_MUTATING = frozenset({"update_address", "cancel_order", "refund_order"})  # the tools that write
_BASE_PROMPT_TOKENS = 1150   # system prompt + the six tool schemas, as the API counts them
_CACHE_MIN, _CACHE_BLOCK = 1024, 128  # OpenAI prompt caching: >= 1024 tokens, 128-token steps


@dataclasses.dataclass(frozen=True)
class Profile:
    """How a simulated model behaves and what it consumes."""

    model: str
    temperature: float
    skill: float                    # P(right plan) on a difficulty-1 task
    difficulty_penalty: float       # subtracted per difficulty level above 1
    recover: float                  # P(fixing a call after the tool reports an error)
    chatter: float                  # P(one extra, harmless read call)
    mistakes: tuple                 # ((kind, weight), ...)
    call_tokens: tuple = (18, 40)   # completion tokens of a tool-call turn
    final_tokens: tuple = (28, 85)  # completion tokens of the final answer
    ttft_s: tuple = (0.3, 0.7)      # time to first token
    tokens_per_s: float = 80.0
    cache_hit: float = 0.85         # P(a cacheable prefix is actually served from cache)


PROFILES: dict[str, Profile] = {
    "small": Profile("gpt-4o-mini-2024-07-18", 0.7, skill=0.57, difficulty_penalty=0.1,
                     recover=0.35, chatter=0.3,
                     mistakes=(("wrong_id", 2), ("wrong_arg", 3), ("skip", 2), ("repeat", 1),
                               ("policy", 4), ("hallucinate", 2)),
                     ttft_s=(0.25, 0.6), tokens_per_s=85.0),
    "large": Profile("gpt-4o-2024-08-06", 0.7, skill=0.85, difficulty_penalty=0.04,
                     recover=0.7, chatter=0.1,
                     mistakes=(("wrong_id", 1), ("wrong_arg", 3), ("skip", 1), ("repeat", 1),
                               ("policy", 2), ("hallucinate", 1)),
                     call_tokens=(16, 36), final_tokens=(30, 90), ttft_s=(0.4, 0.9),
                     tokens_per_s=55.0),
    "degraded": Profile("gpt-4o-mini-2024-07-18", 0.7, skill=0.25, difficulty_penalty=0.08,
                        recover=0.15, chatter=0.5,
                        mistakes=(("wrong_id", 3), ("wrong_arg", 3), ("skip", 3), ("repeat", 2),
                                  ("policy", 5), ("hallucinate", 3)),
                        call_tokens=(24, 60), final_tokens=(40, 120), ttft_s=(0.25, 0.6),
                        tokens_per_s=85.0),
}


def _stable(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big")


def _tokens(x: Any) -> int:
    """A rough token count of a JSON value (about 3.6 characters a token)."""
    return max(1, math.ceil(len(x if isinstance(x, str) else json.dumps(x)) / 3.6))


class SimulatedAgent:
    """A seeded stand-in for an LLM tool-calling agent with a given :class:`Profile`."""

    def __init__(self, profile: Profile, *, name: str, perfect: bool = False) -> None:
        self.profile = profile
        self.name = name
        self.perfect = perfect
        self.__name__ = name

    def __repr__(self) -> str:
        return f"SimulatedAgent({self.name!r}, model={self.profile.model!r})"

    def ek_config(self) -> dict:
        """What decides this agent's answers (its run fingerprint): name, profile, perfection."""
        return {"name": self.name, "perfect": self.perfect,
                "profile": dataclasses.asdict(self.profile)}

    # ------------------------------------------------------------------ planning
    def p_right(self, task: TaskSpec) -> float:
        """The probability of following the right plan on ``task`` (fixed per task)."""
        p = self.profile
        difficulty = int((task.meta or {}).get("difficulty", 1))
        jitter = random.Random(_stable(f"{p.model}|{self.name}|{task.task_id}")).uniform(-0.08, 0.08)
        return min(0.99, max(0.02, p.skill - p.difficulty_penalty * (difficulty - 1) + jitter))

    def _plan(self, task: TaskSpec, gold: list, rng: random.Random) -> tuple[list, Optional[str]]:
        if self.perfect or rng.random() < self.p_right(task):
            return copy.deepcopy(gold), None
        meta = task.meta or {}
        options = []
        for kind, weight in self.profile.mistakes:
            if kind == "policy" and not meta.get("naive_calls"):
                continue
            if kind == "hallucinate" and not meta.get("answer_kind"):
                continue
            if kind == "repeat" and not any(c["tool"] in _MUTATING for c in gold):
                continue
            options.append((kind, weight))
        kind = rng.choices([k for k, _ in options], [w for _, w in options])[0]
        plan = copy.deepcopy(gold)
        if kind == "policy":
            plan = copy.deepcopy(meta["naive_calls"])
        elif kind == "hallucinate":
            plan = []
        elif kind == "skip":
            mut = [i for i, c in enumerate(plan) if c["tool"] in _MUTATING]
            del plan[mut[-1] if mut else len(plan) - 1]
        elif kind == "repeat":
            last = max(i for i, c in enumerate(plan) if c["tool"] in _MUTATING)
            plan.insert(last + 1, copy.deepcopy(plan[last]))
        elif kind == "wrong_id":
            ids = [c["args"]["order_id"] for c in plan if "order_id" in c["args"]]
            if ids:
                bad = ids[-1]
                wrong = f"O{int(bad[1:]) + rng.choice((-1, 1)):04d}"
                for c in plan:
                    if c["args"].get("order_id") == bad:
                        c["args"]["order_id"] = wrong
            else:
                kind = "wrong_arg"
        if kind == "wrong_arg":
            kind = self._perturb_arg(plan, rng) or "skip"
            if kind == "skip":
                del plan[-1]
        return plan, kind

    @staticmethod
    def _perturb_arg(plan: list, rng: random.Random) -> Optional[str]:
        order = sorted(range(len(plan)), key=lambda i: (plan[i]["tool"] not in _MUTATING, -i))
        for i in order:
            args = plan[i]["args"]
            if "amount" in args:
                a = float(args["amount"])
                args["amount"] = rng.choice([round(a * 1.1, 2), round(a) + 0.0 if a != round(a) else a + 1,
                                             round(a / 2, 2)])
                return "wrong_arg"
            if "reason" in args:
                args["reason"] = rng.choice([r for r in CANCEL_REASONS if r != args["reason"]])
                return "wrong_arg"
            if "zip" in args:
                z = args["zip"]
                args["zip"] = z[:-2] + z[-1] + z[-2] if len(z) > 2 and z[-1] != z[-2] else z + "0"
                return "wrong_arg"
            if "status" in args:
                args["status"] = rng.choice([s for s in ORDER_STATUSES if s != args["status"]])
                return "wrong_arg"
            if "email" in args:
                local, _, domain = args["email"].partition("@")
                typo = local[:-2] + local[-1] + local[-2] if len(local) > 1 else local
                args["email"] = (typo if typo != local else local + "x") + "@" + domain
                return "wrong_arg"
        return None

    # ------------------------------------------------------------------ running
    def __call__(self, task: TaskSpec, *, seed: Optional[int] = None) -> Episode:
        gold = task.gold.get("calls") if isinstance(task.gold, dict) else None
        if not isinstance(gold, list) or not gold:
            raise InvalidInput(f"{self.name}: task {task.task_id!r} has no gold 'calls'; the simulated "
                               "shop agents replay (and perturb) the right plan, so they need one")
        # no seed given: draw one (recorded in run.seed, so the episode can be replayed)
        seed = random.SystemRandom().randrange(2**31) if seed is None else int(seed)
        rng = random.Random(seed ^ _stable(task.task_id))
        plan, mistake = self._plan(task, gold, rng)
        p = self.profile
        if not self.perfect and rng.random() < p.chatter and plan:
            ids = [c["args"]["order_id"] for c in plan if "order_id" in c["args"]]
            extra = {"tool": "get_order", "args": {"order_id": ids[0]}} if ids else None
            if extra is not None:
                plan.insert(rng.randrange(len(plan)), extra)

        env = ShopEnv.for_task(task)
        recovered = False
        i = 0
        while i < len(plan):
            call = plan[i]
            step = env.step(call["tool"], call["args"])
            if step.error and not self.perfect and not recovered and rng.random() < p.recover:
                # the model reads the error and gets back on the right plan from here
                recovered = True
                at = min(i, len(gold) - 1)
                plan = plan[:i + 1] + copy.deepcopy(gold[at:])
            i += 1
        output = self._answer(task, gold, env, rng, mistake)
        steps = tuple(env.steps)
        return Episode(
            task_id=task.task_id,
            trajectory=Trajectory(steps),
            output=output,
            final_state=env.final_state(output),
            cost=None if self.perfect else self._cost(task, steps, output, rng),
            run=RunProvenance(seed=seed, temperature=p.temperature, model=p.model, simulator="none",
                              suite_version=SUITE_VERSION, scaffold=SCAFFOLD),
            meta={"agent": self.name, "simulated_mistake": mistake, "recovered": recovered},
        )

    def _answer(self, task: TaskSpec, gold: list, env: ShopEnv, rng: random.Random,
                mistake: Optional[str]) -> str:
        meta = task.meta or {}
        kind = meta.get("answer_kind")
        if kind:
            value = None
            if mistake == "hallucinate":
                db = load_db()
                value = {
                    "status": lambda: rng.choice(ORDER_STATUSES),
                    "amount": lambda: rng.choice([o["total"] for o in db["orders"].values()]),
                    "order_ids": lambda: sorted(rng.sample(sorted(db["orders"]), 2)),
                    "email": lambda: rng.choice([c["email"] for c in db["customers"].values()]),
                }[kind]()
            else:
                last_tool = gold[-1]["tool"]
                for step in reversed(env.steps):
                    if step.tool == last_tool and not step.error:
                        value = read_path(step.observation, meta.get("answer_from", ""))
                        break
            if value is None or value == []:
                return "I'm sorry, I couldn't find that information."
            if kind == "status":
                return f"The order is currently {value}."
            if kind == "amount":
                return f"That comes to ${value:,.2f}."
            if kind == "order_ids":
                return "Those orders are " + ", ".join(value) + "."
            return f"The email address on file is {value}."
        done = [s for s in env.steps if s.tool in _MUTATING and not s.error]
        if not done:
            return "I looked into it: under our policy I can't make that change, so nothing was changed."
        verbs = {"update_address": "updated the shipping address of", "cancel_order": "cancelled",
                 "refund_order": "issued a refund on"}
        parts = [f"{verbs[s.tool]} order {s.args.get('order_id')}" for s in done]
        return "Done: I " + "; ".join(parts) + "."

    def _cost(self, task: TaskSpec, steps: tuple, output: str, rng: random.Random) -> Cost:
        p = self.profile
        history = _BASE_PROMPT_TOKENS + _tokens(task.input if task.input is not None else "") + 4
        total = Cost(latency_s=0.0)
        prev_prompt = 0
        for turn in range(len(steps) + 1):
            prompt = history
            cached = 0
            if prev_prompt >= _CACHE_MIN and rng.random() < p.cache_hit:
                cached = prev_prompt // _CACHE_BLOCK * _CACHE_BLOCK
            if turn < len(steps):
                out = rng.randint(*p.call_tokens)
                s = steps[turn]
                history += out + _tokens(s.observation) + 8
            else:
                out = max(rng.randint(*p.final_tokens), _tokens(output))
            latency = rng.uniform(*p.ttft_s) + out / p.tokens_per_s + (0.02 if turn < len(steps) else 0)
            total = total + Cost(input_tokens=prompt, output_tokens=out, cached_input_tokens=cached,
                                 latency_s=round(latency, 4))
            prev_prompt = prompt
        return total


small_agent = SimulatedAgent(PROFILES["small"], name="small_agent")
large_agent = SimulatedAgent(PROFILES["large"], name="large_agent")
degraded_agent = SimulatedAgent(PROFILES["degraded"], name="degraded_agent")
#: Always follows the right plan (no cost recorded): a check that every goal is reachable.
oracle_agent = SimulatedAgent(dataclasses.replace(PROFILES["large"], model="oracle", temperature=0.0),
                              name="oracle_agent", perfect=True)
