"""What a server process sets up before it serves: its open-file limit, the connections it
holds, and where its log lines go (issue 28)."""

import logging
import resource
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from planledger.api.identity import Identity
from planledger.api.logs import PlainHandler, configure_logging
from planledger.api.mcp.server import build_server
from planledger.api.open_files import raise_open_file_limit
from planledger.api.runtime import Runtime
from planledger.api.service import Service
from planledger.api.settings import (
    DEFAULT_MAX_CONNECTIONS,
    FILES_KEPT,
    MAX_CONNECTIONS_SETTING,
    Settings,
    load_settings,
)


@contextmanager
def bare_root_logger() -> Iterator[logging.Logger]:
    """The root logger with no handler, as in a fresh process; restored afterwards (not a
    fixture: pytest adds its capturing handlers after the fixtures are set up)."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    root.handlers.clear()
    try:
        yield root
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)


def test_the_soft_open_file_limit_is_raised_to_the_hard_one() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY:
        pytest.skip("the hard limit is unlimited: there is no number to raise to")
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard - 1, hard))
    try:
        assert raise_open_file_limit() == hard
        assert resource.getrlimit(resource.RLIMIT_NOFILE) == (hard, hard)
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_no_rich_handler_is_on_the_root_logger_after_the_mcp_server_is_built(
    rt: Runtime,
) -> None:
    service = Service(rt, Settings(db=rt.db), Identity(rt.secret, None))
    with bare_root_logger() as root:
        configure_logging()
        build_server(service, single_connection=False)
        configure_logging()  # a second call adds nothing
        handlers = root.handlers[:]
    assert [type(h) for h in handlers] == [PlainHandler], handlers
    assert not any(type(h).__module__.startswith("rich") for h in handlers)


def test_connections_leave_files_for_the_store_below_a_low_open_file_limit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(MAX_CONNECTIONS_SETTING, raising=False)
    assert load_settings(db="memory", open_files=256).max_connections == 256 - FILES_KEPT
    assert load_settings(db="memory", open_files=100_000).max_connections == (
        DEFAULT_MAX_CONNECTIONS)
    assert load_settings(db="memory").max_connections == DEFAULT_MAX_CONNECTIONS


def test_a_connection_cap_the_open_files_cannot_hold_is_refused_naming_the_setting(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(MAX_CONNECTIONS_SETTING, "500")
    assert load_settings(db="memory", open_files=1024).max_connections == 500
    with pytest.raises(ValueError, match=f"{MAX_CONNECTIONS_SETTING}=500 .* at most 192"):
        load_settings(db="memory", open_files=256)
    monkeypatch.setenv(MAX_CONNECTIONS_SETTING, "0")
    with pytest.raises(ValueError, match=f"{MAX_CONNECTIONS_SETTING}=0 is out of range"):
        load_settings(db="memory")
