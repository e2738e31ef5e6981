"""bench/table.py renders every row of the benchmark table from one run's figures and writes
it into docs/benchmarks.md between its markers; bench_flow's harness row runs at a tiny size (no timing asserted)."""
import importlib

import pytest

table = importlib.import_module("bench.table")


def test_every_row_is_rendered_with_figure_baseline_and_ratio():
    figs = {"flow.run_suite_s": 2.0, "flow.run_suite_ideal_s": 1.5, "flow.run_suite_vs_ideal": 2.0 / 1.5,
            "scoring.in_order_pairs_differing": 0}
    text = table.render(figs, "test box, 2 cores")
    lines = [ln for ln in text.splitlines() if ln.startswith("| ") and not ln.startswith("| measure")]
    assert len(lines) == len(table.ROWS)
    assert "test box, 2 cores" in text
    assert "| 2 s | 1.5 s | 1.33 x ideal | <= 1.10x |" in lines[0]
    assert "| 0 |" in next(ln for ln in lines if "pairs where" in ln)
    assert "not run" in next(ln for ln in lines if "tau-bench" in ln)  # missing figures say so


def test_write_page_replaces_only_between_markers(tmp_path):
    readme = tmp_path / "benchmarks.md"
    readme.write_text(f"# x\nbefore\n{table.BEGIN}\nold table\n{table.END}\nafter\n")
    table.write_page("| new |\n", readme)
    assert readme.read_text() == f"# x\nbefore\n{table.BEGIN}\n| new |\n{table.END}\nafter\n"
    plain = tmp_path / "plain.md"
    plain.write_text("no markers\n")
    with pytest.raises(SystemExit, match="markers"):
        table.write_page("| t |\n", plain)
    assert plain.read_text() == "no markers\n"


def test_the_benchmarks_page_has_the_markers():
    text = table.PAGE.read_text()
    assert text.index(table.BEGIN) < text.index(table.END)


def test_bench_flow_quick_harness_row():
    figs = importlib.import_module("bench.bench_flow").main(["--quick", "--skip", "import"])
    assert figs["run_suite_ideal_s"] == pytest.approx(128 * 0.05 / 64)
    assert figs["run_suite_vs_ideal"] > 0 and figs["asyncio_gather_vs_ideal"] > 0
    assert "flow_s" not in figs and "cli_audit_s" not in figs  # --quick runs no server, no CLI
