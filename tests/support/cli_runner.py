"""Running the command line in this process, as a user's shell would run it: its words,
its environment and stdin in; its exit code, stdout and stderr out."""

import io
import os
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from planledger.main import run


@dataclass
class Ran:
    exit_code: int
    stdout: str
    stderr: str
    output: str  # stdout and stderr, in the order they were written
    exception: BaseException | None = None


class _Both(io.StringIO):
    """One stream that also writes everything into `both`."""

    def __init__(self, both: io.StringIO) -> None:
        super().__init__()
        self.both = both

    def write(self, text: str) -> int:
        self.both.write(text)
        return super().write(text)


def _put(name: str, value: str | None) -> None:
    """Set one environment variable (None: unset it)."""
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = value


@contextmanager
def _environment(env: Mapping[str, str | None]) -> Iterator[None]:
    before = {name: os.environ.get(name) for name in env}
    try:
        for name, value in env.items():
            _put(name, value)
        yield
    finally:
        for name, value in before.items():
            _put(name, value)


class CliRunner:
    """`invoke(app, args)`: the call `planledger ARGS` (`app` is the program's `run`)."""

    def invoke(self, app: Callable[[list[str]], int] | None, args: Sequence[str],
               env: Mapping[str, str | None] | None = None, input: str | None = None,
               catch_exceptions: bool = True) -> Ran:
        both = io.StringIO()
        out, err = _Both(both), _Both(both)
        saved = sys.stdin, sys.stdout, sys.stderr
        sys.stdin, sys.stdout, sys.stderr = io.StringIO(input or ""), out, err
        code, failure = 0, None
        try:
            with _environment(env or {}):
                code = (app or run)(list(args))
        except SystemExit as stop:
            code = stop.code if isinstance(stop.code, int) else 1
        except Exception as error:
            if not catch_exceptions:
                raise
            code, failure = 1, error
        finally:
            sys.stdin, sys.stdout, sys.stderr = saved
        return Ran(code, out.getvalue(), err.getvalue(), both.getvalue(), failure)
