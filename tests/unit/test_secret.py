"""The server's secret: too short is refused wherever it comes from; others reading the
file is warned about."""

import logging
import os
from pathlib import Path

import pytest

from planledger.infra.secret import MIN_SECRET_BYTES, SecretError, load_secret, secret_path


def test_an_empty_secret_file_is_refused_naming_the_file(tmp_path: Path) -> None:
    db = str(tmp_path / "ledger.sqlite")
    secret_path(db).write_text("")
    with pytest.raises(SecretError, match=r"ledger\.sqlite\.secret is 0 bytes; at least 32"):
        load_secret(db, configured="")


def test_a_short_secret_from_the_environment_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SecretError, match="PLANLEDGER_SECRET is 5 bytes"):
        load_secret(str(tmp_path / "ledger.sqlite"), configured="short")


def test_a_secret_of_the_minimum_length_is_taken(tmp_path: Path) -> None:
    secret = "k" * MIN_SECRET_BYTES
    assert load_secret(str(tmp_path / "ledger.sqlite"), configured=secret) == secret.encode()


def test_a_new_store_gets_a_private_secret_long_enough(tmp_path: Path) -> None:
    db = str(tmp_path / "ledger.sqlite")
    secret = load_secret(db, configured="")
    assert len(secret) >= MIN_SECRET_BYTES
    assert load_secret(db, configured="") == secret
    assert os.stat(secret_path(db)).st_mode & 0o077 == 0


def test_a_secret_file_others_can_read_is_warned_about(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    db = str(tmp_path / "ledger.sqlite")
    load_secret(db, configured="")
    secret_path(db).chmod(0o644)
    with caplog.at_level(logging.WARNING, logger="planledger.secret"):
        load_secret(db, configured="")
    assert "readable by group or others (mode 644)" in caplog.text
