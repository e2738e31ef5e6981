"""A bench's measurements in child processes of their own: each starts with a fresh heap (its
peak RSS is its own) and with no dirty pages of the child before it.

A bench module keeps a ``CHILDREN`` table (mode -> function of JSON arguments returning a JSON
document), calls :func:`run_child` to measure one, and ends with ``child_main(CHILDREN, main)``.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Callable, Mapping, Optional

ROOT = Path(__file__).resolve().parent.parent


def run_child(module: str, mode: str, args: list, env: Optional[dict] = None) -> dict:
    """Run ``python -m module --child mode ARGS`` and return the JSON document it printed last.
    The file system is synced first: the plain loop leaves ~300 MB of un-synced JSON lines, and
    the next process's first fsync would pay for writing them back."""
    os.sync()
    proc = subprocess.run([sys.executable, "-m", module, "--child", mode, json.dumps(args)],
                          env=env, cwd=ROOT, capture_output=True, text=True)
    if proc.returncode:
        raise RuntimeError(f"{module} child {mode}: {proc.stderr.strip()[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def child_main(children: Mapping[str, Callable], main: Callable[[], object]) -> None:
    """A bench module's entry point: a child's measurement when called as one, else ``main``."""
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        print(json.dumps(children[sys.argv[2]](*json.loads(sys.argv[3])), default=str))
    else:
        main()


def run_child_of(module: str) -> Callable[..., dict]:
    """:func:`run_child` for ``module``'s children: ``run_child_of("bench.scale")("plain", [...])``."""
    def run(mode: str, args: list, env: Optional[dict] = None) -> dict:
        return run_child(module, mode, args, env)
    return run
