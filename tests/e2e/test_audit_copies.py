"""A copy of a store verifies as what it is: `audit verify` never writes a file (above all
not a new secret beside a copy, which would make every head look forged); without the
store's secret it says it cannot check the signed head, and how to give it one, instead
of calling the copy TAMPERED; `db backup --with-secret` makes a copy that verifies on its
own, and `db restore` says when the secret is missing. A store written before signed
heads existed (no head table: it never kept one) verifies with a warning."""

import os
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import pytest

PLANLEDGER = str(Path(sys.executable).parent / "planledger")
SECRET = "a-test-secret-of-more-than-thirty-two-bytes"


def _run(cwd: Path, *args: str, env: dict[str, str] | None = None,
         ) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("PLANLEDGER_")}
    return subprocess.run([PLANLEDGER, *args], cwd=cwd, env={**base, **(env or {})},
                          capture_output=True, text=True, timeout=120, check=False)


@pytest.fixture
def store(tmp_path: Path) -> Path:
    """A store with a few events in it, and its secret beside it."""
    db = tmp_path / "live" / "ledger.sqlite"
    db.parent.mkdir()
    for name in ("a", "b"):
        assert _run(tmp_path, "session", "start", "--name", name, "--db", str(db)).returncode == 0
    assert (db.parent / "ledger.sqlite.secret").is_file()
    return db


def _files(where: Path) -> set[str]:
    return {p.name for p in where.iterdir()}


def test_verifying_a_copy_without_its_secret_writes_nothing_and_says_what_is_missing(
    store: Path, tmp_path: Path,
) -> None:
    copies = tmp_path / "copies"
    copies.mkdir()
    copy = copies / "copy.sqlite"
    assert _run(tmp_path, "db", "backup", str(copy), "--db", str(store)).returncode == 0
    before = _files(copies)

    verified = _run(tmp_path, "audit", "verify", "--db", str(copy))

    assert _files(copies) == before  # no secret made up beside the copy
    assert verified.returncode not in (0, 1), verified
    said = verified.stdout + verified.stderr
    assert "TAMPERED" not in said
    assert "cannot check the signed head" in said and "PLANLEDGER_SECRET" in said
    assert "copy.sqlite.secret" in said


def test_a_copy_verifies_with_the_secret_beside_it_or_in_the_environment(
    store: Path, tmp_path: Path,
) -> None:
    copy = tmp_path / "copy.sqlite"
    assert _run(tmp_path, "db", "backup", str(copy), "--db", str(store)).returncode == 0

    by_env = _run(tmp_path, "audit", "verify", "--db", str(copy),
                  env={"PLANLEDGER_SECRET": (store.parent / "ledger.sqlite.secret")
                       .read_text().strip()})
    assert by_env.returncode == 0 and "matches the log" in by_env.stdout, by_env
    assert not (tmp_path / "copy.sqlite.secret").exists()

    (tmp_path / "copy.sqlite.secret").write_bytes(
        (store.parent / "ledger.sqlite.secret").read_bytes())
    beside = _run(tmp_path, "audit", "verify", "--db", str(copy))
    assert beside.returncode == 0 and "matches the log" in beside.stdout, beside


def test_a_backup_with_its_secret_verifies_and_restores_whole(store: Path, tmp_path: Path,
                                                              ) -> None:
    copy = tmp_path / "copy.sqlite"
    backed = _run(tmp_path, "db", "backup", str(copy), "--with-secret", "--db", str(store))
    assert backed.returncode == 0 and "copy.sqlite.secret" in backed.stdout, backed
    kept = tmp_path / "copy.sqlite.secret"
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600
    assert kept.read_bytes() == (store.parent / "ledger.sqlite.secret").read_bytes()
    assert _run(tmp_path, "audit", "verify", "--db", str(copy)).returncode == 0

    fresh = tmp_path / "fresh" / "ledger.sqlite"
    restored = _run(tmp_path, "db", "restore", str(copy), "--db", str(fresh))
    assert restored.returncode == 0, restored
    assert (fresh.parent / "ledger.sqlite.secret").read_bytes() == kept.read_bytes()
    assert _run(tmp_path, "audit", "verify", "--db", str(fresh)).returncode == 0


def test_restoring_a_copy_without_its_secret_warns(store: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy.sqlite"
    assert _run(tmp_path, "db", "backup", str(copy), "--db", str(store)).returncode == 0
    fresh = tmp_path / "fresh" / "ledger.sqlite"

    restored = _run(tmp_path, "db", "restore", str(copy), "--db", str(fresh))

    assert restored.returncode == 0, restored
    assert "secret" in restored.stderr and "ledger.sqlite.secret" in restored.stderr
    assert not (fresh.parent / "ledger.sqlite.secret").exists()


def test_a_store_from_before_signed_heads_verifies_with_a_warning(store: Path,
                                                                  tmp_path: Path) -> None:
    # What a store written by 0.1 looks like: its events, and no head table at all
    with sqlite3.connect(store) as conn:
        conn.execute("DROP TABLE planledger_head")

    verified = _run(tmp_path, "audit", "verify", "--db", str(store))

    assert verified.returncode == 0, verified
    assert "TAMPERED" not in verified.stdout + verified.stderr
    assert "no signed head yet" in verified.stdout + verified.stderr
    assert "a version that kept none" in verified.stdout + verified.stderr


def test_a_head_deleted_from_a_store_that_kept_one_is_still_tampered(store: Path,
                                                                     tmp_path: Path) -> None:
    with sqlite3.connect(store) as conn:
        conn.execute("DELETE FROM planledger_head")

    verified = _run(tmp_path, "audit", "verify", "--db", str(store))

    assert verified.returncode == 1 and "TAMPERED" in verified.stderr, verified
