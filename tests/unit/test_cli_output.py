"""The command line's own writing of lines and tables (api.cli.output) prints exactly what
rich prints into a pipe, for every text it writes itself, and hands rich the rest."""

import io
import random

import pytest
from rich.console import Console
from rich.table import Table

from planledger.api.cli import output

PIECES = ["a", "plan", "auth-refresh", "01KAB3", "—", "done", "é", "x" * 30, "", " ",
          "[bold]p[/bold]", "[red]", "a[b", "\\[bold]", ":smile:", "10:00:00", ":", "…",
          "日本", "\t", "tab\there", "two\nlines", "ß", "\u00ad", "emoji 😀", "claim:ed:",
          "   ", "y" * 90, "held by \"01KAB3\" (agent B)", "\n", "end. ", "  lead"]


def _texts(seed: int, count: int, most: int = 6) -> list[str]:
    draw = random.Random(seed)
    return [draw.choice([" ", "", "  "]).join(draw.choice(PIECES)
                                              for _ in range(draw.randint(0, most)))
            for _ in range(count)]


def _rich(width: int, renderable: object, markup: bool = True) -> str:
    console = Console(file=io.StringIO(), width=width)
    console.print(renderable, markup=markup)
    return console.file.getvalue()  # type: ignore[attr-defined]


@pytest.mark.parametrize("width", [20, 23, 40, 80, 200])
def test_a_line_reads_as_rich_prints_it(width: int, monkeypatch: pytest.MonkeyPatch,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("COLUMNS", str(width))
    for markup in (True, False):
        for text in _texts(width, 600, most=14):
            output.line(text, markup=markup)
            assert capsys.readouterr().out == _rich(width, text, markup), repr(text)


@pytest.mark.parametrize("width", [20, 60, 80, 200])
def test_a_table_reads_as_rich_prints_it(width: int, monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("COLUMNS", str(width))
    draw = random.Random(width)
    for round_ in range(150):
        columns = [draw.choice(["step", "title", "", "holder / blockers", "é"])
                   for _ in range(draw.randint(1, 5))]
        rows = [_texts(round_ * 10 + r, len(columns)) for r in range(draw.randint(0, 4))]
        title = draw.choice([None, "plans", "ready in p", "[bold]x[/bold]", ""])
        output.table(columns, rows, title, first_no_wrap=round_ % 2 == 0)
        expected = Table(title=title, title_justify="left") if title is not None else Table()
        for index, column in enumerate(columns):
            expected.add_column(column, no_wrap=round_ % 2 == 0 and index == 0)
        for row in rows:
            expected.add_row(*row)
        assert capsys.readouterr().out == _rich(width, expected), (columns, rows, title)


def test_written_plainly_only_where_rich_would_write_no_styles(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    pipe = io.StringIO()
    assert output._plain_width(pipe) == 80
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert output._plain_width(pipe) is None
    monkeypatch.setenv("FORCE_COLOR", "")
    assert output._plain_width(pipe) == 80
    monkeypatch.setenv("TTY_COMPATIBLE", "1")
    assert output._plain_width(pipe) is None


@pytest.mark.parametrize("width", [20, 31, 80])
def test_a_long_line_folds_as_rich_folds_it(width: int, monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("COLUMNS", str(width))
    draw = random.Random(width)
    words = ["a", "held", "by", '"01KAB3XYZ"', "(agent B)", "—", "x" * 45, "", " ", "\n"]
    for _ in range(400):
        text = draw.choice([" ", "  ", ""]).join(draw.choice(words)
                                                 for _ in range(draw.randint(1, 40)))
        assert output._plain(text, False) is not None
        output.line(text, markup=False, stderr=True)
        assert capsys.readouterr().err == _rich(width, text, markup=False), repr(text)
