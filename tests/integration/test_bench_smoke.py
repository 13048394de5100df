"""The benchmark suite at smoke size: every benchmark runs and reports its figures, the
harness tables them, and the results page and its plot get written. How fast is not
checked here (tiny sizes on a shared machine say nothing about speed)."""

import ast
import contextlib
import io
import json
import math
import re
from pathlib import Path
from typing import Any

import pytest

from planledger.bench import compare, results
from planledger.bench.__main__ import BENCHMARKS, main

BENCH = Path(__file__).resolve().parents[2] / "bench"

# Each benchmark at smoke size is a test of its own (the slowest ~13 s of an idle core), so
# the suite's workers share them out and each stays far inside the suite's time limit.
# The results page is checked on two: contention's figures draw the plot, claims' do not.
PAGED = ("contention", "claims")


def smoke_run(names: list[str], out: Path) -> dict[str, list[dict[str, Any]]]:
    """The harness run on `names` at smoke size: the figures it wrote to `out`."""
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert main([*names, "--smoke", "--json", str(out)]) == 0
    # tiny sizes on a shared machine say nothing about goals: no verdict is printed
    assert not re.search(r"\b(met|MISSED)\b", printed.getvalue()), printed.getvalue()
    figures: dict[str, list[dict[str, Any]]] = json.loads(out.read_text())
    return figures


@pytest.mark.parametrize("name", sorted(BENCHMARKS))
def test_the_benchmark_runs_and_reports_finite_figures(name: str, tmp_path: Path) -> None:
    figures = smoke_run([name], tmp_path / "figures.json")
    assert list(figures) == [name]
    assert figures[name], f"{name} reported no figure"
    for figure in figures[name]:
        assert math.isfinite(figure["value"]) and figure["value"] >= 0, (name, figure)
        if figure["baseline"] is not None:
            assert figure["baseline"] > 0 and math.isfinite(figure["ratio"]), (name, figure)


def test_every_module_with_a_run_is_listed_as_a_benchmark() -> None:
    runs = {path.stem for path in BENCH.glob("*.py")
            if any(isinstance(node, ast.FunctionDef) and node.name == "run"
                   for node in ast.parse(path.read_text(encoding="utf-8")).body)}
    assert runs == set(BENCHMARKS)


def test_results_page_lists_every_figure_with_the_machine_and_draws_the_plot(
    tmp_path: Path,
) -> None:
    figured = smoke_run(list(PAGED), tmp_path / "figures.json")
    page = results.write(figured, tmp_path).read_text()
    assert "machine:" in page and "python -m planledger.bench" in page
    for figures in figured.values():
        for figure in figures:
            assert figure["name"] in page
    plot = tmp_path / results.PLOT
    assert plot.read_bytes().startswith(b"\x89PNG")


def test_compare_runs_this_tree_against_a_revision_side_by_side(
    capsys: pytest.CaptureFixture[str],
) -> None:
    compare.main(["HEAD", "--rounds", "1", "--cycles", "20"])

    out = capsys.readouterr().out
    assert out.startswith("round 1: user_us ")
    assert "HEAD -> this tree" in out
    assert re.search(r"  wall_us +\d+ -> +\d+  \(\d+\.\d{3}x\)", out), out


def test_compare_refuses_a_revision_git_does_not_know() -> None:
    with pytest.raises(SystemExit, match="cannot check out 'no-such-revision'"):
        compare.main(["no-such-revision", "--rounds", "1", "--cycles", "5"])
