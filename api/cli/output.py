"""What the command line prints for people: lines, and tables in plain aligned columns
(as git and kubectl print them), on the standard library alone.

A table fits the terminal's width when it prints to a terminal (or to the width COLUMNS
names): the columns that may be cut (titles, details) are shortened with an ellipsis, never
an id, so every id in a table can be copied into the next command. The columns that may be
folded (a timeline's messages, which name ids among their words) continue on the lines
below instead, broken between words and never inside one. Into a pipe, where no width
applies, every row prints whole on one line, for grep and awk.

Every piece of text is printed as one line of printable characters: a step's title is
anybody's input, and a control character in it (an escape sequence that moves the cursor
or rewrites the screen, a line break that forges a row) is shown as `?`, never sent to the
terminal.
"""

import itertools
import os
import sys
from collections.abc import Sequence
from typing import IO

ELLIPSIS = "…"
GAP = "  "  # between columns
MIN_CUT_WIDTH = 8  # a cut column keeps at least this many characters
# Line breaks and tabs read as a space; every other control character as `?`.
_SPACES = {ord(c): " " for c in "\t\n\r\v\f"}
_CONTROLS = {code: "?" for code in (*range(0x20), 0x7F, *range(0x80, 0xA0))
             if code not in _SPACES}
_SHOWN = str.maketrans({**_CONTROLS, **_SPACES})


def printable(text: str) -> str:
    """`text` as one line of printable characters."""
    return text.translate(_SHOWN)


def _stream(stderr: bool) -> IO[str]:
    return sys.stderr if stderr else sys.stdout


def line(text: str, stderr: bool = False) -> None:
    """One line of text (on stderr for a refusal or a warning), shown printable."""
    stream = _stream(stderr)
    stream.write(printable(text) + "\n")
    stream.flush()


def echo(text: str) -> None:
    """Text as it is (JSON, a page of HTML), with a line end."""
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def width(stream: IO[str] | None = None) -> int | None:
    """The width that output must fit, or None for no limit.

    COLUMNS wins when it names a width. Otherwise, when `stream` (stdout) is a terminal,
    the terminal's width applies. A pipe or a file has no limit."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    stream = stream or sys.stdout
    try:
        if stream.isatty():
            return os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, ValueError, OSError):
        pass
    return None


def table(columns: Sequence[str], rows: Sequence[Sequence[str]], title: str | None = None,
          cut: Sequence[int] = (), fold: Sequence[int] = ()) -> None:
    """Print a table of `columns` (headed in capitals) and `rows`, under `title` if given.

    Columns whose indexes are in `cut` shorten to fit the width. Columns in `fold`
    continue on the lines below instead."""
    sys.stdout.write(drawn(columns, rows, title, cut, width(), fold))
    sys.stdout.flush()


def drawn(columns: Sequence[str], rows: Sequence[Sequence[str]], title: str | None,
          cut: Sequence[int], limit: int | None, fold: Sequence[int] = ()) -> str:
    """The table's text, fitted to `limit` characters a line (None: no limit)."""
    cells = [[c.upper() for c in columns], *([printable(c) for c in row] for row in rows)]
    sizes = [max(len(row[i]) for row in cells) for i in range(len(columns))]
    if limit is not None:
        floors = {i: MIN_CUT_WIDTH for i in cut}
        floors.update({i: max(MIN_CUT_WIDTH, _longest_word(cells, i)) for i in fold})
        sizes = _fitted(sizes, floors, limit)
    out = [printable(title) + ":"] if title else []
    for row in cells:
        pieces = [_folded(text, size) if i in fold else [_shortened(text, size)]
                  for i, (text, size) in enumerate(zip(row, sizes, strict=True))]
        for texts in itertools.zip_longest(*pieces, fillvalue=""):
            padded = [t.ljust(size) for t, size in zip(texts[:-1], sizes[:-1], strict=True)]
            out.append(GAP.join([*padded, texts[-1]]).rstrip())
    return "\n".join(out) + "\n"


def _fitted(sizes: list[int], floors: dict[int, int], limit: int) -> list[int]:
    """Column sizes that fit within `limit`.

    The widest column that may shrink loses one character at a time, down to its floor.
    If every column is at its floor, the line stays wider than the terminal."""
    sizes = list(sizes)
    excess = sum(sizes) + len(GAP) * (len(sizes) - 1) - limit
    while excess > 0:
        shrinkable = [i for i, floor in floors.items() if sizes[i] > floor]
        if not shrinkable:
            break
        widest = max(shrinkable, key=lambda i: sizes[i])
        sizes[widest] -= 1
        excess -= 1
    return sizes


def _longest_word(cells: list[list[str]], column: int) -> int:
    return max((len(word) for row in cells for word in row[column].split()), default=0)


def _folded(text: str, size: int) -> list[str]:
    """`text` in lines of at most `size` characters, broken at spaces (a column is never
    narrower than its longest word)."""
    if len(text) <= size:
        return [text]
    lines = [""]
    for word in text.split():
        if lines[-1] and len(lines[-1]) + 1 + len(word) > size:
            lines.append(word)
        else:
            lines[-1] = f"{lines[-1]} {word}" if lines[-1] else word
    return lines


def _shortened(text: str, size: int) -> str:
    return text if len(text) <= size else text[:size - 1] + ELLIPSIS


def text(lines: str, stderr: bool = False) -> None:
    """Text of several lines, each shown printable."""
    for each in lines.split("\n"):
        line(each, stderr)


def write(page: str) -> None:
    """A page as it is (HTML that ends its own lines), nothing added."""
    sys.stdout.write(page)
    sys.stdout.flush()


def reader_gone() -> None:
    """Handle a reader that closed the pipe early (`| head`).

    The rest of the output goes to the null device. The interpreter's last flush at exit
    then succeeds, and no traceback follows the lines the reader took."""
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, sys.stdout.fileno())
    os.close(null)
