"""Each benchmark in a fresh interpreter (see `run_apart`)."""

import inspect
import multiprocessing as mp
import queue
import traceback
from collections.abc import Callable
from typing import Any

from planledger.bench.timing import Figure


def run_apart(name: str, run: Callable[..., list[Figure]], smoke: bool,
              seconds: float | None = None) -> list[Figure]:
    """Run one benchmark (`run`, its module's; `name` is for messages) in a fresh
    interpreter, which imports only that module: what one leaves in the heap (the memory
    benchmark builds a 1,000,000-event log) must not slow the next (the rebuild's ratio
    fell from 0.52-0.55x alone to 0.47x after the others, in one process)."""
    context = mp.get_context("spawn")
    answers: Any = context.Queue()
    process = context.Process(target=_run_and_answer, args=(run, smoke, seconds, answers))
    process.start()
    answer = _answer_of(name, process, answers)
    process.join()
    if isinstance(answer, str):
        raise RuntimeError(f"benchmark {name} failed:\n{answer}")
    figures: list[Figure] = answer
    return figures


def _run_and_answer(run: Callable[..., list[Figure]], smoke: bool, seconds: float | None,
                    answers: Any) -> None:
    try:
        timed = seconds is not None and "seconds" in inspect.signature(run).parameters
        answers.put(run(smoke=smoke, seconds=seconds) if timed else run(smoke=smoke))
    except BaseException:
        answers.put(traceback.format_exc())


def _answer_of(name: str, process: Any, answers: Any) -> Any:
    """The child's answer; an error if it died without one (its last words may still be
    on their way when it is seen gone: they get a few seconds more)."""
    while True:
        try:
            return answers.get(timeout=1.0)
        except queue.Empty:
            if process.is_alive():
                continue
        try:
            return answers.get(timeout=5.0)
        except queue.Empty:
            raise RuntimeError(
                f"benchmark {name} died (exit code {process.exitcode})") from None
