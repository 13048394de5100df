"""What the command line prints for people: one-line answers and tables, as rich prints
them, written directly when that is the same text, and through rich when it is not.

Loading rich costs more than a call to a server does by itself (issue 19: agents run the
command line through a shell, once per call, and read what it prints through a pipe). Into
a pipe rich writes no styles, and a line or a table that fits the width is plain text in a
known layout; so when the output is not a terminal and every piece of text is of the kind
whose layout is certain (printable ASCII and a few more letters, no markup but our own
`[bold]`-style tags, no emoji code, fitting the width), this module writes that text
itself. Anything else (a terminal, colours forced, a long line that rich would wrap, a title
with `[brackets]`) goes to rich as before. tests/unit/test_cli_output.py holds the two
equal, text by text.
"""

import os
import re
import sys
from collections.abc import Sequence
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

# Characters rich gives one cell each, beyond printable ASCII (cell widths elsewhere vary).
_ONE_CELL = frozenset("—…" + "".join(map(chr, range(0xC0, 0x100))))
# The markup our renderers write themselves; a `[` left after removing them is someone's.
_OUR_TAGS = re.compile(r"\[(/?)(bold|cyan)\]")
_EMOJI_CODE = re.compile(r":\S*?:")
_WORD = re.compile(r"\s*\S+\s*")


def rich_console(stderr: bool = False) -> "Console":
    """A rich console on stdout (or stderr), as the environment is now (a test's runner
    changes it between calls)."""
    from rich.console import Console

    return Console(stderr=stderr)


def _stream(stderr: bool) -> IO[str]:
    return sys.stderr if stderr else sys.stdout


def _plain_width(stream: IO[str]) -> int | None:
    """The width rich would use on `stream` if it writes no styles there, else None."""
    environ = os.environ
    compatible = environ.get("TTY_COMPATIBLE", "")
    forced = environ.get("FORCE_COLOR")
    if compatible == "1" or (compatible != "0" and forced is not None and forced != ""):
        return None
    if compatible != "0" and forced is None:
        try:
            if stream.isatty():
                return None
        except (AttributeError, ValueError):
            return None
    if not (getattr(stream, "encoding", None) or "utf-8").lower().startswith("utf"):
        return None  # rich draws ASCII boxes then
    return _width()


def _width() -> int | None:
    # As rich.console.Console measures it (COLUMNS, else a terminal on 0, 1 or 2, else 80).
    columns = os.environ.get("COLUMNS")
    if columns is not None and columns.isdigit():
        width = int(columns)
    else:
        width = 0
        for descriptor in (0, 1, 2):
            try:
                width = os.get_terminal_size(descriptor).columns
                break
            except (AttributeError, ValueError, OSError):
                continue
        width = width or 80
    return width if width >= 20 else None


def _plain(text: str, markup: bool) -> str | None:
    """`text` as rich shows it without styles, when that is certain; else None."""
    if markup:
        if "\\[" in text:
            return None
        text = _OUR_TAGS.sub("", text)
        if "[" in text:
            return None
    if ":" in text and _EMOJI_CODE.search(text):
        from rich._emoji_replace import _emoji_replace

        if _emoji_replace(text) != text:
            return None
    if all(" " <= c <= "~" or c in _ONE_CELL or c == "\n" for c in text):
        return text
    return None


def line(text: str, markup: bool = True, stderr: bool = False) -> None:
    """`console.print(text, markup=markup)` on stdout (or stderr)."""
    stream = _stream(stderr)
    width = _plain_width(stream)
    shown = _plain(text, markup) if width is not None else None
    if shown is None or width is None:
        rich_console(stderr).print(text, markup=markup)
        return
    stream.write("".join(f"{piece}\n" for piece in _wrapped(shown, width)))
    stream.flush()


def _wrapped(text: str, width: int) -> list[str]:
    """The lines rich folds `text` (one cell per character) into at `width`."""
    lines = []
    for whole in text.split("\n"):
        breaks = _breaks(whole, width)
        for start, end in zip([0, *breaks], [*breaks, len(whole)], strict=True):
            piece = whole[start:end]
            if len(piece) > width:  # whitespace past the edge goes, then the rest is cut
                spaces = len(piece) - len(piece.rstrip())
                piece = piece[:len(piece) - min(spaces, len(piece) - width)][:width]
            lines.append(piece)
    return lines


def _breaks(text: str, width: int) -> list[int]:
    """Where rich breaks a line (rich._wrap.divide_line, folding long words), for text of
    one cell per character. Its quirks are kept: the output must be the same."""
    breaks: list[int] = []
    offset = 0
    for word in _WORD.finditer(text):
        start, word_text = word.start(), word.group()
        length = len(word_text.rstrip())
        if width - offset >= length:
            offset += len(word_text)
        elif length > width:
            folded = [word_text[i:i + width] for i in range(0, len(word_text), width)]
            for index, piece in enumerate(folded):
                if start:
                    breaks.append(start)
                if index == len(folded) - 1:
                    offset = len(piece)
                else:
                    start += len(piece)
        elif offset and start:
            breaks.append(start)
            offset = len(word_text)
    return breaks


def echo(text: str) -> None:
    """`typer.echo(text)`: the text as it is, never wrapped."""
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def table(columns: Sequence[str], rows: Sequence[Sequence[str]],
          title: str | None = None, first_no_wrap: bool = False) -> None:
    """A rich `Table(title=title, title_justify="left")` of `columns` and `rows`, printed."""
    width = _plain_width(sys.stdout)
    drawn = _plain_table(columns, rows, title, width) if width is not None else None
    if drawn is None:
        rich_console().print(_rich_table(columns, rows, title, first_no_wrap))
        return
    sys.stdout.write(drawn)
    sys.stdout.flush()


def _rich_table(columns: Sequence[str], rows: Sequence[Sequence[str]], title: str | None,
                first_no_wrap: bool) -> Any:
    from rich.table import Table

    drawn = Table(title=title, title_justify="left") if title is not None else Table()
    for index, column in enumerate(columns):
        drawn.add_column(column, no_wrap=first_no_wrap and index == 0)
    for row in rows:
        drawn.add_row(*row)
    return drawn


def _plain_table(columns: Sequence[str], rows: Sequence[Sequence[str]], title: str | None,
                 width: int) -> str | None:
    """The table in rich's HEAVY_HEAD box when every cell is plain and it fits `width`
    at its natural size (rich neither wraps nor shrinks a column then); else None."""
    cells = [[_plain(text, True) for text in row] for row in [columns, *rows]]
    if any(text is None or "\n" in text for row in cells for text in row):
        return None
    sizes = [max(len(row[i]) for row in cells) + 2 for i in range(len(columns))]  # type: ignore[arg-type]
    inner = sum(sizes) + len(sizes) - 1
    if not columns or inner + 2 > width:
        return None
    out: list[str] = []
    if title:  # rich shows no empty title
        heading = _plain(title, True)
        if heading is None or "\n" in heading or len(heading) > inner + 2:
            return None
        out.append(heading.ljust(inner + 2))

    def rule(left: str, fill: str, cross: str, right: str) -> str:
        return left + cross.join(fill * size for size in sizes) + right

    def row(texts: list[str | None], bar: str) -> str:
        padded = (f" {text:<{size - 2}} " for text, size in zip(texts, sizes, strict=True))
        return bar + bar.join(padded) + bar

    out.append(rule("┏", "━", "┳", "┓"))
    out.append(row(cells[0], "┃"))
    out.append(rule("┡", "━", "╇", "┩"))
    out.extend(row(texts, "│") for texts in cells[1:])
    out.append(rule("└", "─", "┴", "┘"))
    return "\n".join(out) + "\n"
