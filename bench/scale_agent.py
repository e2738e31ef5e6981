"""The zero-latency agent of ``make bench-scale`` (issue 27): a plain answer, no wait, mixed
outcomes. With ``EK_SCALE_CALLS=<dir>`` each process counts its calls into ``<dir>/<pid>``
(rewritten every 1,024 calls and at exit: a SIGKILLed process undercounts by < 1,024)."""
from __future__ import annotations

import atexit
import os

_DIR = os.environ.get("EK_SCALE_CALLS")
_N = [0]


def _save() -> None:
    if _DIR:
        with open(os.path.join(_DIR, str(os.getpid())), "w") as fh:
            fh.write(str(_N[0]))


if _DIR:
    atexit.register(_save)


def answer(task_id: str, text: str, seed: int) -> str:
    """The answer (shared with the plain loop): right unless the seed hits the task's residue."""
    return text.upper() if (seed + len(task_id)) % 5 else "?"


async def zero_latency_agent(task, *, seed: int) -> str:
    if _DIR:
        _N[0] += 1
        if not _N[0] & 1023:
            _save()
    return answer(task.task_id, task.input, seed)


def calls(path: str) -> int:
    """Calls counted by every process into ``path``."""
    return sum(int(open(os.path.join(path, f)).read() or 0) for f in os.listdir(path))
