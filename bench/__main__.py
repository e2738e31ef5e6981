"""``python -m bench``: run every ``bench/bench_*.py`` module's ``main()`` and print one table.

Each module's ``main(argv)`` returns a dict of figures; the table shows the timings (``*_s``)
and the ratios against the baseline measured in the same run (``*_vs_*``). ``python -m bench
NAME ...`` runs only the named modules (``scoring``, ``pipeline``).
"""
from __future__ import annotations

import importlib
import pkgutil
import sys
from pathlib import Path


def modules(only: list[str]) -> list[str]:
    names = sorted(m.name for m in pkgutil.iter_modules([str(Path(__file__).parent)])
                   if m.name.startswith("bench_"))
    return [n for n in names if not only or n.removeprefix("bench_") in only or n in only]


def main(argv: list[str] | None = None) -> int:
    only = list(sys.argv[1:] if argv is None else argv)
    rows = []
    for name in modules(only):
        print(f"\n# {name}")
        figures = importlib.import_module(f"bench.{name}").main([]) or {}
        rows += [(name.removeprefix("bench_"), k, v) for k, v in figures.items()
                 if isinstance(v, (int, float)) and (k.endswith("_s") or "_vs_" in k)]
    print("\n| bench | figure | value |\n|---|---|---|")
    for bench, key, value in rows:
        unit = " s" if key.endswith("_s") else "x"
        print(f"| {bench} | {key} | {value:.3g}{unit} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
