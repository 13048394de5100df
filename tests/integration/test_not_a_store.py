"""A file that is not a planledger store is refused at open, naming it, by every command
that opens the embedded store (`plan list`, `serve`, `db status`): a text file, another
program's SQLite database, a `stored_events` table of another shape, a directory. The
file is left as it was, and no secret or view file is made beside it."""

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest


def planledger(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PLANLEDGER_")}
    return subprocess.run([sys.executable, "-m", "planledger", *args], capture_output=True,
                          text=True, env=env, cwd=cwd, timeout=120, check=False)


def text_file(path: Path) -> None:
    path.write_text("shopping: milk, eggs\n" * 50)


def foreign_database(path: Path) -> None:
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL)")
    db.close()


def wrong_shaped_store(path: Path) -> None:
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE stored_events (id INTEGER, payload TEXT)")
    db.close()


MAKERS = {"text": (text_file, "not an SQLite database"),
          "foreign": (foreign_database, "other tables (invoices)"),
          "wrong-shaped": (wrong_shaped_store, "lacks the event store's columns")}


@pytest.mark.parametrize("kind", MAKERS)
@pytest.mark.parametrize("command", [("plan", "list"), ("serve", "--port", "1"),
                                     ("db", "status")], ids=["plan list", "serve", "db status"])
def test_a_file_that_is_no_store_is_refused_naming_it(
        tmp_path: Path, kind: str, command: tuple[str, ...]) -> None:
    make, why = MAKERS[kind]
    store = tmp_path / "given.sqlite"
    make(store)
    before, files_before = store.read_bytes(), sorted(os.listdir(tmp_path))
    done = planledger(*command, "--db", store.name, cwd=tmp_path)
    said = " ".join(done.stderr.split())  # as one line, however the terminal wrapped it
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert f"{store.name} is not a planledger store" in said and why in said, said
    assert "Traceback" not in done.stderr and "retry" not in said
    assert store.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == files_before  # no secret, no views file


def test_a_directory_is_refused_naming_it(tmp_path: Path) -> None:
    (tmp_path / "folder").mkdir()
    done = planledger("plan", "list", "--db", "folder", cwd=tmp_path)
    assert done.returncode == 1
    assert "folder is a directory, not a planledger store" in " ".join(done.stderr.split())


def test_an_empty_file_and_a_new_path_become_stores(tmp_path: Path) -> None:
    (tmp_path / "empty.sqlite").touch()
    (tmp_path / "plan.yaml").write_text("slug: p\ntitle: P\nsteps:\n  - title: a\n")
    for name in ("empty.sqlite", "new.sqlite"):
        made = planledger("plan", "create", "plan.yaml", "--db", name, cwd=tmp_path)
        assert made.returncode == 0, made.stderr
        listed = planledger("plan", "list", "--db", name, cwd=tmp_path)
        assert listed.returncode == 0 and "p" in listed.stdout, listed.stderr
