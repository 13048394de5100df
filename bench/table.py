"""The figures as the harness prints them: a row per figure (its value, its same-run
baseline, the ratio and whether the goal was met), and one table of the rows."""

from typing import Any


def _number(value: float | None) -> str:
    if value is None:
        return "-"
    if value >= 1000:
        return f"{value:,.0f}"
    return f"{value:.3g}" if value < 10 else f"{value:.1f}"


def _verdict(figure: Any) -> str:
    if figure.goal is None or figure.ratio is None:
        return ""
    sign = "<=" if figure.lower_is_better else ">="
    return f"{'met' if figure.met else 'MISSED'} ({sign} {figure.goal:g}x)"


def rows(name: str, figures: list[Any], judged: bool = True) -> list[list[str]]:
    """A row per figure; `judged` False (a smoke run: tiny sizes say nothing about goals)
    leaves the goal column empty rather than print a verdict nobody should trust."""
    return [[name, f.name, f"{_number(f.value)} {f.unit}", f.baseline_name or "",
             _number(f.baseline) if f.baseline is not None else "",
             f"{f.ratio:.3g}x" if f.ratio is not None else "",
             _verdict(f) if judged else ""]
            for f in figures]


def table(found: list[list[str]]) -> str:
    head = ["bench", "figure", "value", "baseline (same run)", "baseline", "ratio", "goal"]
    widths = [max(len(r[i]) for r in [head, *found]) for i in range(len(head))]
    lines = [" | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
             for r in [head, ["-" * w for w in widths], *found]]
    return "\n".join(lines)
