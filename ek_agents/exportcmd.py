"""``ek-agents export``: stored runs as Parquet, CSV or JSON Lines tables, and their check.

``ek-agents export RUN [RUN ...] --out DIR [--format parquet|csv|jsonl] [--store URL]`` writes
the runs, trials, calls and steps tables of :mod:`ek_agents.report.frames` into ``DIR``
(streaming: a segment at a time) with ``export.json``, the digests of what was exported;
``ek-agents export --verify --out DIR`` checks an export against its runs (exit 1 naming what
differs). The library modules are imported inside the command, for the reason ``cli`` gives
(``ek-agents --help`` should not pay for pyarrow or the run readers).
"""
from __future__ import annotations

import argparse
from typing import Any

from .cliargs import name_arg, store_arg

__all__ = ["add_export_parser", "cmd_export"]


def add_export_parser(sub: Any) -> None:
    """Register ``export`` among ``sub`` (the CLI's subparsers)."""
    p = sub.add_parser("export", help="write stored runs as Parquet, CSV or JSON Lines tables "
                                      "(runs, trials, calls, steps) with the digests exported")
    p.add_argument("run_ids", nargs="*", metavar="RUN_ID", type=name_arg("run id"))
    p.add_argument("--format", default="parquet", choices=("parquet", "csv", "jsonl"),
                   help="the tables' format (default parquet)")
    p.add_argument("--out", required=True, metavar="DIR", help="the folder to write (a local path)")
    p.add_argument("--verify", action="store_true",
                   help="check the export in --out against its runs instead of writing one")
    store_arg(p)


def cmd_export(a: argparse.Namespace) -> int:
    """Run ``ek-agents export``; 0 ok (1 when --verify finds a difference: AuditFailed)."""
    from .errors import InvalidInput
    from .report.export import export_runs, verify_export

    if a.verify:
        for line in verify_export(a.out, store=a.store):
            print(f"ok: {line}")
        return 0
    if not a.run_ids:
        raise InvalidInput("export: give one or more RUN_IDs to export (or --verify --out DIR)")
    record = export_runs(a.run_ids, a.out, fmt=a.format, store=a.store)
    for name, f in sorted(record.files.items()):
        print(f"{a.out}/{name}: {f.rows:,} rows, sha256 {f.sha256[:12]}...")
    print(f"{a.out}/export.json: {len(record.runs)} run(s), their manifests' digests")
    return 0
