"""Write bench/RESULTS.md and the contention plot from a run's figures.

    python -m planledger.bench --json /tmp/figures.json      # run the benchmarks
    python -m planledger.bench.results /tmp/figures.json
    # -> bench/RESULTS.md, bench/claims_vs_agents.png

The page names the machine and the command, and gives every figure with its same-run
baseline and ratio; the plot shows successful claims/s against the number of agents.
"""

import argparse
import json
import os
import platform
import re
import sqlite3
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
PLOT = "claims_vs_agents.png"
COMMAND = ("python -m planledger.bench --json figures.json"
           " && python -m planledger.bench.results figures.json")
FINDINGS = HERE / "findings.md"  # what was made faster and what is still missed: kept by hand
_RACING = re.compile(r"^(\d+) agents? (?:racing|alone): (?:successful )?claims/s$")


def machine() -> str:
    """One line about the machine: CPU, cores, memory, OS, Python, SQLite."""
    cpu = "unknown CPU"
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        names = [ln.split(":", 1)[1].strip() for ln in cpuinfo.read_text().splitlines()
                 if ln.startswith("model name")]
        cpu = names[0] if names else cpu
    memory = ""
    meminfo = Path("/proc/meminfo")
    if meminfo.exists():
        kib = int(meminfo.read_text().split()[1])
        memory = f", {kib / 1024 / 1024:.1f} GiB RAM"
    return (f"{cpu}, {os.cpu_count()} cores{memory}; {platform.system()} "
            f"{platform.release()}; Python {platform.python_version()}; "
            f"SQLite {sqlite3.sqlite_version}")


def _number(value: float | None) -> str:
    if value is None:
        return ""
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.3g}" if abs(value) < 10 else f"{value:.1f}"


def _goal(figure: dict[str, Any]) -> str:
    if figure.get("goal") is None:
        return ""
    sign = "<=" if figure.get("lower_is_better") else ">="
    verdict = "met" if figure.get("met") else "**missed**"
    return f"{sign} {figure['goal']:g}x: {verdict}"


def table(figures: dict[str, list[dict[str, Any]]]) -> str:
    lines = ["| bench | figure | value | baseline (same run) | baseline | ratio | goal | rounds |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for bench, found in figures.items():
        for f in found:
            ratio = f"{f['ratio']:.2f}x" if f.get("ratio") is not None else ""
            lines.append(f"| {bench} | {f['name']} | {_number(f['value'])} {f['unit']} | "
                         f"{f.get('baseline_name') or ''} | {_number(f.get('baseline'))} | "
                         f"{ratio} | {_goal(f)} | {f.get('rounds', '')} |")
    return "\n".join(lines)


def claims_by_agents(figures: dict[str, list[dict[str, Any]]]) -> list[tuple[int, float]]:
    """(agents, successful claims/s) from the contention figures, fewest agents first."""
    points = []
    for f in figures.get("contention", []):
        match = _RACING.match(f["name"])
        if match:
            points.append((int(match.group(1)), float(f["value"])))
    return sorted(points)


def plot(points: list[tuple[int, float]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")  # files only: no display on servers and CI
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.6), dpi=120)
    ax.plot([a for a, _ in points], [c for _, c in points], marker="o")
    ax.set_xscale("log", base=2)
    ax.set_xticks([a for a, _ in points], [str(a) for a, _ in points])
    ax.set_xlabel("agent processes racing over the same ready steps")
    ax.set_ylabel("successful claims/s")
    ax.set_ylim(bottom=0)
    ax.set_title("planledger on SQLite: claims/s against agents")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def write(figures: dict[str, list[dict[str, Any]]], out: Path, notes: str = "",
          measured: datetime | None = None) -> Path:
    """Write RESULTS.md (and the plot, when there are contention figures) into `out`;
    `measured` is when the figures were taken (default now)."""
    points = claims_by_agents(figures)
    picture = ""
    if points:
        plot(points, out / PLOT)
        picture = f"\n![successful claims/s against agents]({PLOT})\n"
    page = out / "RESULTS.md"
    page.write_text(
        "# planledger benchmark results\n\n"
        f"- machine: {machine()}\n"
        f"- measured: {measured or datetime.now(UTC):%Y-%m-%d %H:%M} UTC\n"
        f"- command: `{COMMAND}`\n\n"
        "Every figure is a median of several rounds; each round measures the path and its\n"
        "baseline back to back in the same run, so the ratio is what to read (these machines\n"
        "are shared and noisy: absolute figures move from run to run, ratios much less).\n\n"
        f"{table(figures)}\n{picture}{notes}")
    return page


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m planledger.bench.results",
                                     description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("figures", type=Path,
                        help="the JSON `python -m planledger.bench --json` wrote")
    parser.add_argument("--out", type=Path, default=HERE, help="directory (default bench/)")
    parser.add_argument("--notes", type=Path, default=FINDINGS if FINDINGS.exists() else None,
                        help="markdown appended under the table (default bench/findings.md)")
    args = parser.parse_args(argv)
    notes = "\n" + args.notes.read_text() if args.notes else ""
    # The figures were taken when the run wrote its file, not when the page is made.
    measured = datetime.fromtimestamp(args.figures.stat().st_mtime, UTC)
    print(write(json.loads(args.figures.read_text()), args.out, notes, measured))
    return 0


if __name__ == "__main__":
    sys.exit(main())
