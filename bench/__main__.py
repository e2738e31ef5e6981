"""``python -m bench``: run every ``bench/bench_*.py`` module's ``main()`` and print one table.

Each module's ``main(argv)`` returns a dict of figures; the table shows the timings (``*_s``)
and the ratios against the baseline measured in the same run (``*_vs_*``). ``python -m bench
NAME ...`` runs only the named modules (``scoring``, ``pipeline``). Then the benchmark table
(:mod:`bench.table`: every measure with its figure, baseline and ratio) is printed and the
run's figures saved to ``bench/last-run.json``; ``--docs`` also writes that table into
docs/benchmarks.md.
"""
from __future__ import annotations

import importlib
import pkgutil
import sys
from pathlib import Path

from bench import table


def modules(only: list[str]) -> list[str]:
    names = sorted(m.name for m in pkgutil.iter_modules([str(Path(__file__).parent)])
                   if m.name.startswith("bench_"))
    return [n for n in names if not only or n.removeprefix("bench_") in only or n in only]


def main(argv: list[str] | None = None) -> int:
    only = list(sys.argv[1:] if argv is None else argv)
    docs = "--docs" in only
    only = [o for o in only if o != "--docs"]
    rows = []
    run: dict = {}
    for name in modules(only):
        print(f"\n# {name}")
        figures = importlib.import_module(f"bench.{name}").main([]) or {}
        run.update({f"{name.removeprefix('bench_')}.{k}": v for k, v in figures.items()})
        if not only:  # saved after each module: an interrupted full run keeps what it measured
            table.save(run)
        rows += [(name.removeprefix("bench_"), k, v) for k, v in figures.items()
                 if isinstance(v, (int, float)) and (k.endswith("_s") or "_vs_" in k)]
    print("\n| bench | figure | value |\n|---|---|---|")
    for bench, key, value in rows:
        unit = " s" if key.endswith("_s") else "x"
        print(f"| {bench} | {key} | {value:.3g}{unit} |")
    text = table.render(run, table.machine())
    print("\n" + text, end="")
    if not only and docs:  # a full run: the one the published table may be written from
        table.write_page(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
