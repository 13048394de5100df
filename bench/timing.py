"""What every benchmark here shares: a figure with its same-run baseline, medians of rounds.

These machines are noisy, so no figure stands alone: each is the median of several rounds,
and each round measures the path and its baseline back to back, in the same process and
the same directory, so both see the same disk and the same neighbours.
"""

import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from planledger.ledger.domain.ids import local_operator

# Who writes the plans every benchmark sets up (a write always names its author).
OPERATOR = local_operator("bench")


@dataclass(frozen=True)
class Figure:
    """One measured figure next to its baseline; `goal` is the least acceptable ratio
    (or, when `lower_is_better`, the most), None when the figure only informs."""

    name: str
    value: float
    unit: str
    baseline_name: str | None = None
    baseline: float | None = None
    goal: float | None = None
    lower_is_better: bool = False
    rounds: int = 1

    @property
    def ratio(self) -> float | None:
        if self.baseline is None or self.baseline == 0:
            return None
        return self.value / self.baseline

    @property
    def met(self) -> bool | None:
        ratio = self.ratio
        if self.goal is None or ratio is None:
            return None
        return ratio <= self.goal if self.lower_is_better else ratio >= self.goal


def rate(count: int, work: Callable[[], object]) -> float:
    """Operations per second for `count` operations done by one call of `work`."""
    started = time.perf_counter()
    work()
    return count / (time.perf_counter() - started)


def paired_medians(
    rounds: int, measure: Callable[[], float], baseline: Callable[[], float]
) -> tuple[float, float, int]:
    """Median of `rounds` alternating measurements of the path and its baseline."""
    values: list[float] = []
    bases: list[float] = []
    for _ in range(rounds):
        bases.append(baseline())
        values.append(measure())
    return statistics.median(values), statistics.median(bases), rounds


@contextmanager
def scratch_dir(prefix: str) -> Iterator[Path]:
    """A fresh directory on the same disk as the working tree's temp files, removed after."""
    with tempfile.TemporaryDirectory(prefix=f"planledger-bench-{prefix}-") as path:
        yield Path(path)
