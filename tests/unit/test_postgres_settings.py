"""What a postgresql:// `--db` value configures: pool, timeouts, schema, and what stays off."""

from pathlib import Path

import pytest
from eventsourcing.utils import Environment

from planledger.infra import memory_answers, pg_append, sqlite_head
from planledger.infra.persistence import open_event_store, persistence_for
from planledger.infra.pg_connect import libpq_conninfo
from planledger.ledger.storage import (
    MEMORY,
    StorageConfigError,
    postgres_conninfo,
    store_settings,
)
from planledger.ledger.store import EventStore

URL = "postgresql://alice:s%40cret@db.example:6543/ledger"


def test_url_names_server_database_user_and_default_schema_and_pool() -> None:
    settings = store_settings(URL)
    assert persistence_for(URL) is pg_append.Factory
    assert "PERSISTENCE_MODULE" not in settings  # the adapter is handed over, not named
    assert (settings["POSTGRES_HOST"], settings["POSTGRES_PORT"]) == ("db.example", "6543")
    assert (settings["POSTGRES_DBNAME"], settings["POSTGRES_USER"]) == ("ledger", "alice")
    assert settings["POSTGRES_PASSWORD"] == "s@cret"
    assert settings["POSTGRES_SCHEMA"] == "public"
    assert settings["POSTGRES_POOL_SIZE"] == "5" and settings["POSTGRES_LOCK_TIMEOUT"] == "10"


def test_query_options_set_schema_pool_and_timeouts() -> None:
    settings = store_settings(f"{URL}?schema=team_a&pool_size=2&max_overflow=0"
                              "&connect_timeout=3&lock_timeout=4&idle_in_transaction_timeout=6")
    assert settings["POSTGRES_SCHEMA"] == "team_a"
    assert (settings["POSTGRES_POOL_SIZE"], settings["POSTGRES_MAX_OVERFLOW"]) == ("2", "0")
    assert settings["POSTGRES_CONNECT_TIMEOUT"] == "3"
    assert settings["POSTGRES_LOCK_TIMEOUT"] == "4"
    assert settings["POSTGRES_IDLE_IN_TRANSACTION_SESSION_TIMEOUT"] == "6"


def test_replicas_never_create_tables_nor_use_the_lockless_insert_function() -> None:
    settings = store_settings(URL)
    assert settings["CREATE_TABLE"] == "no"
    assert settings["POSTGRES_ENABLE_DB_FUNCTIONS"] == "no"


HA = ("postgresql://alice:s%40cret@pg1.example:5432,[fd00::2]:6543,pg3.example/ledger"
      "?target_session_attrs=read-write&sslmode=require&application_name=replica-a&schema=t")


def test_several_hosts_and_libpq_parameters_pass_through_beside_ours() -> None:
    info = postgres_conninfo(HA)
    assert (info["host"], info["port"]) == ("pg1.example,fd00::2,pg3.example", "5432,6543,5432")
    assert (info["dbname"], info["user"], info["password"]) == ("ledger", "alice", "s@cret")
    assert info["target_session_attrs"] == "read-write" and info["sslmode"] == "require"
    assert info["application_name"] == "replica-a" and info["connect_timeout"] == "10"
    assert "schema" not in info  # ours, not libpq's
    assert store_settings(HA)["POSTGRES_SCHEMA"] == "t"


def test_the_stores_pool_connects_with_every_libpq_parameter() -> None:
    factory = pg_append.Factory(Environment(EventStore.name, store_settings(HA)))
    try:  # the pool connects at its first use only: nothing is reached here
        kwargs = factory.datastore.pool.kwargs
        assert isinstance(kwargs, dict)
        assert kwargs["host"] == "pg1.example,fd00::2,pg3.example"
        assert kwargs["target_session_attrs"] == "read-write"
        assert (kwargs["sslmode"], kwargs["connect_timeout"]) == ("require", "10")
    finally:
        factory.close()


def test_a_parameter_neither_libpq_nor_planledger_knows_is_refused_naming_it() -> None:
    refusal = r'invalid connection option "pool".*planledger.s \(schema, pool_size'
    with pytest.raises(StorageConfigError, match=refusal):
        libpq_conninfo(f"{URL}?pool=3")
    with pytest.raises(StorageConfigError, match=refusal):
        pg_append.Factory(Environment(EventStore.name, store_settings(f"{URL}?pool=3")))


@pytest.mark.parametrize("hosts", ["h1:0", "h1:5432,h2:99999", "h1:five"])
def test_a_port_that_is_no_port_is_refused(hosts: str) -> None:
    with pytest.raises(StorageConfigError, match="is not a port number"):
        store_settings(f"postgresql://u@{hosts}/db")


@pytest.mark.parametrize("query", ["pool_size=many", "lock_timeout=-1", "schema=a;drop"])
def test_malformed_option_is_refused(query: str) -> None:
    with pytest.raises(StorageConfigError):
        store_settings(f"{URL}?{query}")



def test_each_store_gets_its_own_adapter_whatever_the_environment_names(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
) -> None:
    # The library would otherwise take PERSISTENCE_MODULE from the process's environment.
    monkeypatch.setenv("PERSISTENCE_MODULE", "eventsourcing.popo")
    assert persistence_for(MEMORY) is memory_answers.Factory
    assert persistence_for("postgres://db/x") is pg_append.Factory
    store = open_event_store(str(tmp_path / "ledger.sqlite"))
    try:
        assert type(store.factory) is sqlite_head.Factory
    finally:
        store.close()


@pytest.mark.parametrize("db", [":memory:", "file:x?mode=memory&cache=shared"])
def test_an_in_memory_sqlite_name_is_refused_naming_the_in_memory_store(db: str) -> None:
    refusal = rf"not a store; the in-memory store is --db {MEMORY}"
    with pytest.raises(StorageConfigError, match=refusal):
        store_settings(db)
