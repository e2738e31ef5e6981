"""The shop world: a JSON database of customers, products and orders, and six tools over it.

Each tool is a pure function ``tool(db, **args) -> (new_db, observation)`` that never mutates
its input; a bad call raises :class:`ToolError`. :class:`ShopEnv` holds one copy of the
database for one episode, runs calls (a failed call becomes an observation ``{"error": ...}``
and a :class:`~ek_agents.base.Step` with ``error`` set) and reports the final state that the
``final_state`` checker grades::

    {"db": <records changed since the start, as {table: {id: record}}>, "answer": <or None>}

``db`` is ``{}`` when nothing changed, so a read-only task's goal is ``{"db": {}, "answer": X}``
and any stray write fails it. ``answer`` is read from the agent's final message for tasks that
ask a question (``task.meta["answer_kind"]``: ``status``, ``amount``, ``order_ids``, ``email``).

>>> env = ShopEnv()
>>> env.call("get_order", {"order_id": "O1004"})["status"]
'pending'
>>> env.call("cancel_order", {"order_id": "O1004", "reason": "customer_request"})["status"]
'cancelled'
>>> env.call("refund_order", {"order_id": "O1004", "amount": 5})
{'error': 'order O1004 is cancelled; only shipped or delivered orders can be refunded'}
>>> sorted(env.final_state()["db"]["orders"])
['O1004']
"""
from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any, Callable, Optional

from ek_agents.base import Step, TaskSpec, ToolSpec
from ek_agents.core import FieldSpec

__all__ = ["ShopEnv", "ToolError", "TOOLS", "TOOL_SPECS", "POLICY", "load_db", "DB_PATH",
           "SUITE_PATH", "SUITE_NAME", "SUITE_VERSION", "extract_answer", "read_path",
           "ORDER_STATUSES"]

HERE = Path(__file__).resolve().parent
DB_PATH = HERE / "db.json"
SUITE_PATH = HERE / "suite.yaml"
SUITE_NAME = "shop"
#: The bundled suite's version (what the example agents record as ``suite_version``).
SUITE_VERSION = "1.0"
ORDER_STATUSES = ("pending", "processing", "shipped", "delivered", "cancelled", "refunded")
CANCEL_REASONS = ("customer_request", "duplicate", "fraud")

#: What a support agent in this shop is told (the adapter's system prompt for the shop).
POLICY = (
    "You are a customer-support agent for an online shop. Use the tools to look up customers "
    "and orders; never guess ids or amounts. Policy: only pending or processing orders can be "
    "cancelled or have their shipping address changed; only delivered orders can be refunded, "
    "and never for more than was paid minus what was already refunded. A customer who wants "
    "their money back for an order that has not shipped gets it cancelled instead. Do only what "
    "the customer asks. When you answer a question, state the answer plainly (amounts in "
    "dollars, e.g. $24.99)."
)


class ToolError(Exception):
    """A tool call the shop refuses (unknown id, bad argument, against the rules)."""


def load_db(path: Optional[Path] = None) -> dict:
    """A fresh copy of the bundled database (or the JSON database at ``path``)."""
    with open(path or DB_PATH, encoding="utf-8") as fh:
        return json.load(fh)


# --------------------------------------------------------------------------- the tools

def _order(db: dict, order_id: Any) -> dict:
    if not isinstance(order_id, str) or order_id not in db["orders"]:
        raise ToolError(f"order {order_id} not found")
    return db["orders"][order_id]


def _with_order(db: dict, order: dict) -> dict:
    return {**db, "orders": {**db["orders"], order["id"]: order}}


def _summary(o: dict) -> dict:
    return {"id": o["id"], "placed": o["placed"], "status": o["status"], "total": o["total"]}


def get_order(db: dict, *, order_id: str) -> tuple[dict, Any]:
    """One order, in full (items, total, refunded, shipping address, status)."""
    return db, copy.deepcopy(_order(db, order_id))


def find_customer(db: dict, *, email: Optional[str] = None, name: Optional[str] = None,
                  customer_id: Optional[str] = None) -> tuple[dict, Any]:
    """The customer matching an email, a full name or an id (case-insensitive)."""
    if email is None and name is None and customer_id is None:
        raise ToolError("give one of email, name or customer_id")
    for c in db["customers"].values():
        if ((email is None or str(email).strip().lower() == c["email"])
                and (name is None or str(name).strip().lower() == c["name"].lower())
                and (customer_id is None or customer_id == c["id"])):
            return db, copy.deepcopy(c)
    raise ToolError("no customer matches " + ", ".join(
        f"{k}={v!r}" for k, v in (("email", email), ("name", name), ("customer_id", customer_id))
        if v is not None))


def list_orders(db: dict, *, customer_id: str, status: Optional[str] = None) -> tuple[dict, Any]:
    """A customer's orders (id, placed, status, total), oldest first, optionally by status."""
    if customer_id not in db["customers"]:
        raise ToolError(f"customer {customer_id} not found")
    if status is not None and status not in ORDER_STATUSES:
        raise ToolError(f"unknown status {status!r}; one of {', '.join(ORDER_STATUSES)}")
    rows = [_summary(o) for o in db["orders"].values()
            if o["customer_id"] == customer_id and (status is None or o["status"] == status)]
    return db, sorted(rows, key=lambda r: (r["placed"], r["id"]))


def update_address(db: dict, *, order_id: str, street: str, city: str, zip: str) -> tuple[dict, Any]:
    """Change an unshipped order's shipping address."""
    o = _order(db, order_id)
    if o["status"] not in ("pending", "processing"):
        raise ToolError(f"order {order_id} is {o['status']}; only pending or processing orders "
                        "can change address")
    for k, v in (("street", street), ("city", city), ("zip", zip)):
        if not isinstance(v, str) or not v.strip():
            raise ToolError(f"{k} must be a non-empty string")
    new = {**copy.deepcopy(o), "ship_to": {"street": street, "city": city, "zip": zip}}
    return _with_order(db, new), {"order_id": order_id, "ship_to": new["ship_to"]}


def cancel_order(db: dict, *, order_id: str, reason: str) -> tuple[dict, Any]:
    """Cancel an unshipped order (destructive)."""
    o = _order(db, order_id)
    if reason not in CANCEL_REASONS:
        raise ToolError(f"reason must be one of {', '.join(CANCEL_REASONS)}, got {reason!r}")
    if o["status"] not in ("pending", "processing"):
        raise ToolError(f"order {order_id} is {o['status']}; only pending or processing orders "
                        "can be cancelled")
    new = {**copy.deepcopy(o), "status": "cancelled", "cancel_reason": reason}
    return _with_order(db, new), {"order_id": order_id, "status": "cancelled"}


def refund_order(db: dict, *, order_id: str, amount: float) -> tuple[dict, Any]:
    """Refund part or all of a paid order (destructive). The system accepts shipped orders;
    the shop's *policy* refunds only delivered ones."""
    o = _order(db, order_id)
    if isinstance(amount, bool) or not isinstance(amount, (int, float)) or not amount > 0:
        raise ToolError(f"amount must be a positive number, got {amount!r}")
    if o["status"] not in ("shipped", "delivered"):
        raise ToolError(f"order {order_id} is {o['status']}; only shipped or delivered orders "
                        "can be refunded")
    left = round(o["total"] - o["refunded"], 2)
    if round(float(amount), 2) > left:
        raise ToolError(f"amount {amount} exceeds the refundable balance {left:.2f}")
    refunded = round(o["refunded"] + float(amount), 2)
    new = {**copy.deepcopy(o), "refunded": refunded}
    if refunded >= o["total"]:
        new["status"] = "refunded"
    return _with_order(db, new), {"order_id": order_id, "refunded": refunded, "status": new["status"]}


TOOLS: dict[str, Callable[..., tuple[dict, Any]]] = {
    f.__name__: f for f in (find_customer, get_order, list_orders, update_address, cancel_order,
                            refund_order)
}

_S = "string"
#: The tools' argument schemas with their error costs (what the suite file declares).
TOOL_SPECS: dict[str, ToolSpec] = {
    "find_customer": ToolSpec("find_customer", {
        "email": FieldSpec("email", _S, 1.0), "name": FieldSpec("name", _S, 1.0),
        "customer_id": FieldSpec("customer_id", _S, 1.0)}, description=find_customer.__doc__),
    "get_order": ToolSpec("get_order", {
        "order_id": FieldSpec("order_id", _S, 2.0, required=True)}, description=get_order.__doc__),
    "list_orders": ToolSpec("list_orders", {
        "customer_id": FieldSpec("customer_id", _S, 2.0, required=True),
        "status": FieldSpec("status", _S, 1.0, domain=ORDER_STATUSES)}, description=list_orders.__doc__),
    "update_address": ToolSpec("update_address", {
        "order_id": FieldSpec("order_id", _S, 5.0, required=True),
        "street": FieldSpec("street", _S, 3.0, required=True),
        "city": FieldSpec("city", _S, 3.0, required=True),
        "zip": FieldSpec("zip", _S, 3.0, required=True)}, importance=3.0,
        description=update_address.__doc__),
    "cancel_order": ToolSpec("cancel_order", {
        "order_id": FieldSpec("order_id", _S, 10.0, required=True),
        "reason": FieldSpec("reason", _S, 2.0, domain=CANCEL_REASONS, required=True)},
        destructive=True, description=cancel_order.__doc__.split("\n")[0]),
    "refund_order": ToolSpec("refund_order", {
        "order_id": FieldSpec("order_id", _S, 10.0, required=True),
        "amount": FieldSpec("amount", "number", 20.0, required=True)},
        destructive=True, description="Refund part or all of a shipped or delivered order "
        "(destructive)."),
}


# --------------------------------------------------------------------------- answers

_STATUS_RE = re.compile(r"\b(" + "|".join(ORDER_STATUSES) + r")\b", re.I)
_MONEY_RE = re.compile(r"\$\s?(\d[\d,]*(?:\.\d+)?)")
_ORDER_RE = re.compile(r"\bO\d{4}\b")
_EMAIL_RE = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")


def extract_answer(kind: Optional[str], text: Any) -> Any:
    """Read a task's answer out of a free-text reply (``None`` when there is none to read).

    >>> extract_answer("amount", "You were refunded $1,024.50 in total.")
    1024.5
    >>> extract_answer("order_ids", "Pending: O1007 and O1006.")
    ['O1006', 'O1007']
    >>> extract_answer("status", "It is shipped, not delivered") is None   # ambiguous
    True
    """
    if kind is None:
        return None
    if not isinstance(text, str):
        text = "" if text is None else json.dumps(text)
    if kind == "status":
        found = {m.lower() for m in _STATUS_RE.findall(text)}
        return found.pop() if len(found) == 1 else None
    if kind == "amount":
        found = _MONEY_RE.findall(text)
        return round(float(found[-1].replace(",", "")), 2) if found else None
    if kind == "order_ids":
        return sorted(set(_ORDER_RE.findall(text)))
    if kind == "email":
        found = _EMAIL_RE.findall(text)
        return found[-1].lower() if found else None
    raise ValueError(f"unknown answer kind {kind!r}; one of status, amount, order_ids, email")


def read_path(obs: Any, path: str) -> Any:
    """Read an answer out of an observation: ``"status"`` (a field), ``"last.status"`` (a
    field of the last row), ``"*.id"`` (a field of every row), ``"balance"`` (total - refunded).

    >>> read_path([{"id": "O1"}, {"id": "O2"}], "*.id"), read_path({"total": 9.5, "refunded": 2}, "balance")
    (['O1', 'O2'], 7.5)
    """
    if not isinstance(obs, (dict, list)) or (isinstance(obs, dict) and "error" in obs):
        return None
    head, _, rest = path.partition(".")
    if isinstance(obs, list):
        if head == "*":
            return [read_path(r, rest) for r in obs]
        if head == "last":
            return read_path(obs[-1], rest) if obs else None
        return None
    if head == "balance":
        return round(obs["total"] - obs["refunded"], 2)
    return obs.get(head)


# --------------------------------------------------------------------------- the environment

class ShopEnv:
    """One episode's copy of the shop: run tool calls, read the state.

    ``ShopEnv(db=None, *, task=None)``; ``ShopEnv.for_task(task)`` is the ``env_factory``
    the OpenAI adapter takes. ``call`` returns the observation; ``step`` the whole
    :class:`~ek_agents.base.Step`; ``steps`` keeps every step run so far.
    """

    def __init__(self, db: Optional[dict] = None, *, task: Optional[TaskSpec] = None) -> None:
        self._initial = copy.deepcopy(db) if db is not None else load_db()
        self._db = self._initial  # the tools are pure: a call returns a new db, never edits this one
        self.task = task
        self.steps: list[Step] = []

    @classmethod
    def for_task(cls, task: Optional[TaskSpec] = None) -> "ShopEnv":
        """A fresh environment for ``task`` (the bundled database)."""
        return cls(task=task)

    @property
    def state(self) -> dict:
        """A copy of the whole current database."""
        return copy.deepcopy(self._db)

    def step(self, tool: str, args: Any) -> Step:
        """Run one call; a refused call is a Step whose ``error`` says why."""
        try:
            fn = TOOLS.get(tool)
            if fn is None:
                raise ToolError(f"unknown tool {tool!r}; available: {', '.join(TOOLS)}")
            if not isinstance(args, dict):
                raise ToolError(f"arguments must be a JSON object, got {args!r}")
            spec = TOOL_SPECS[tool]
            unknown = sorted(set(args) - set(spec.params))
            if unknown:
                raise ToolError(f"{tool} got unexpected argument(s) {unknown}; "
                                f"it takes {', '.join(spec.params)}")
            missing = [p for p in spec.required if p not in args]
            if missing:
                raise ToolError(f"{tool} is missing required argument(s) {missing}")
            self._db, obs = fn(self._db, **args)
            step = Step(tool, dict(args), obs)
        except ToolError as exc:
            step = Step(tool, args, {"error": str(exc)}, str(exc))
        self.steps.append(step)
        return step

    def call(self, tool: str, args: Any) -> Any:
        """Run one call and return what the agent sees (``{"error": ...}`` on a refusal)."""
        return self.step(tool, args).observation

    def changes(self) -> dict:
        """``{table: {id: record}}`` for every record that differs from the start."""
        out: dict = {}
        for table, rows in self._db.items():
            before = self._initial.get(table, {})
            diff = {k: copy.deepcopy(v) for k, v in rows.items() if before.get(k) != v}
            diff.update({k: None for k in before if k not in rows})
            if diff:
                out[table] = diff
        return out

    def final_state(self, output: Any = None) -> dict:
        """What the ``final_state`` checker grades: ``{"db": changes, "answer": ...}``."""
        kind = (self.task.meta or {}).get("answer_kind") if self.task is not None else None
        return {"db": self.changes(), "answer": extract_answer(kind, output)}
