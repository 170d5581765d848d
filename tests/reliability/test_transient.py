"""Transient failures on one server, no cluster needed: a server that is down when the
saver starts (a typed error at once: it was never reached), a read-only database, and
the retry's bounds. Every failure is a typed error; nothing is raw."""

from __future__ import annotations

import asyncio
import multiprocessing
from collections.abc import Iterator
from typing import Any

import pytest
from langgraph.checkpoint.base import empty_checkpoint
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import OperationalError
from sqlalchemy.pool import NullPool

from langgraph.checkpoint.sqlalchemy import (
    CheckpointConnectionError,
    CheckpointReadOnlyError,
    RetryEvent,
    SQLAlchemySaver,
)
from langgraph.checkpoint.sqlalchemy.dialects import query_builder

from ..provision import BACKENDS, POSTGRES_ADMIN_URL, fresh_database, new_name

CONFIG = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
#: lgsa_locks as revision 0005 creates it on MySQL/MariaDB.
LOCKS_COLUMNS = (
    "name VARCHAR(64) NOT NULL PRIMARY KEY, owner VARCHAR(64) NOT NULL, expires_at DOUBLE NOT NULL"
)
#: Ports nothing listens on (the servers of the suite are on 5432 and 3306).
DOWN = {
    "postgres": "postgresql+psycopg://root@127.0.0.1:1/test",
    "mariadb": "mysql+pymysql://root@127.0.0.1:1/test",
}


@pytest.mark.parametrize("backend", [b for b in ("postgres", "mariadb") if b in BACKENDS])
def test_a_server_down_at_start_is_a_typed_error_at_once(backend: str) -> None:
    # Never reached: a wrong port or a server not started fails at the first attempt,
    # whatever retry_timeout (outages after a first connection are ridden through:
    # tests/engine/test_first_contact.py).
    retried: list[RetryEvent] = []  # at once: not one retry (30 s of them otherwise)
    saver = SQLAlchemySaver.from_conn_string(
        DOWN[backend], retry_timeout=30, on_retry=retried.append
    )
    with pytest.raises(
        CheckpointConnectionError, match=r"cannot connect to the database at .*:1/.*port 1\)"
    ):
        saver.setup()
    assert retried == []
    with pytest.raises(CheckpointConnectionError):
        saver.get_tuple(CONFIG)
    with pytest.raises(CheckpointConnectionError):
        saver.put(CONFIG, empty_checkpoint(), {}, {})
    with pytest.raises(CheckpointConnectionError), saver.lock_thread("t"):
        pytest.fail("locked without a server")

    async def async_calls() -> None:
        with pytest.raises(CheckpointConnectionError):
            await saver.aget_tuple(CONFIG)
        with pytest.raises(CheckpointConnectionError):
            await saver.asetup()
        with pytest.raises(CheckpointConnectionError):
            async with saver.alock_thread("t"):
                pytest.fail("locked without a server")

    asyncio.run(async_calls())
    saver.close()


def test_retry_timeout_must_be_a_non_negative_number() -> None:
    with pytest.raises(ValueError, match="retry_timeout"):
        SQLAlchemySaver.from_conn_string(":memory:", retry_timeout=-1)


@pytest.fixture
def read_only_postgres() -> Iterator[str]:
    """A PostgreSQL database set up by the saver, then made read-only
    (``default_transaction_read_only``: writes fail with SQLSTATE 25006, as on a hot
    standby)."""
    if "postgres" not in BACKENDS:
        pytest.skip("PostgreSQL not in LGSA_TEST_BACKENDS")
    name = new_name("lgsa_ro")
    admin = create_engine(POSTGRES_ADMIN_URL, poolclass=NullPool, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    url = make_url(POSTGRES_ADMIN_URL).set(database=name).render_as_string(hide_password=False)
    try:
        with SQLAlchemySaver.from_conn_string(url) as saver:
            saver.setup()
            saver.put(CONFIG, empty_checkpoint(), {}, {})
        with admin.connect() as conn:
            conn.execute(text(f'ALTER DATABASE "{name}" SET default_transaction_read_only = on'))
        yield url
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def test_writes_to_a_read_only_server_raise_a_typed_error_naming_it(
    read_only_postgres: str,
) -> None:
    with SQLAlchemySaver.from_conn_string(read_only_postgres, retry_timeout=0.3) as saver:
        assert saver.get_tuple(CONFIG) is not None  # reads work
        with pytest.raises(CheckpointReadOnlyError, match="is read-only") as caught:
            saver.put(CONFIG, empty_checkpoint(), {}, {})
        assert make_url(read_only_postgres).database in str(caught.value)
        assert isinstance(caught.value, CheckpointConnectionError)  # retriable
        with pytest.raises(CheckpointReadOnlyError):
            saver.delete_thread("t")

        async def async_write() -> None:
            await saver.aput(CONFIG, empty_checkpoint(), {}, {})

        with pytest.raises(CheckpointReadOnlyError):
            asyncio.run(async_write())
        assert saver.get_tuple(CONFIG) is not None  # still usable for reads


def test_transient_errors_are_classified_by_the_dialects() -> None:
    """The codes each dialect retries (the errors themselves are raised for real by the
    cluster tests and the tests above)."""
    mysql, postgres = query_builder("mysql"), query_builder("postgresql")

    def mysql_error(code: int) -> OperationalError:
        import pymysql

        return OperationalError("stmt", {}, pymysql.err.OperationalError(code, "message"))

    assert mysql.transient(mysql_error(1213)) == "conflict"  # deadlock, Galera certification
    assert mysql.is_disconnect(mysql_error(1047).orig)  # WSREP has not yet prepared node
    assert mysql.is_disconnect(mysql_error(2003).orig)  # can't connect
    assert mysql.transient(mysql_error(1290)) == "read-only"
    assert mysql.transient(mysql_error(1180)) == "connection"  # Galera: no primary component
    assert mysql.transient(mysql_error(1062)) is None  # a duplicate key is not transient
    import psycopg

    refused = psycopg.OperationalError("connection failed")
    assert postgres.is_disconnect(refused)
    serialization = psycopg.errors.SerializationFailure("could not serialize")
    assert postgres.transient(OperationalError("stmt", {}, serialization)) == "conflict"
    read_only = psycopg.errors.ReadOnlySqlTransaction("read-only")
    assert postgres.transient(OperationalError("stmt", {}, read_only)) == "read-only"
    unique = psycopg.errors.UniqueViolation("duplicate")
    assert postgres.transient(OperationalError("stmt", {}, unique)) is None


def test_a_lost_connection_raised_while_handling_another_error_is_retried() -> None:
    """SQLAlchemy wraps an error raised while it handles another (the rollback after a
    failed statement) without running the ``handle_error`` listeners, so without its
    ``connection_invalidated`` mark: the dialect's own codes still make it a lost
    connection (a Galera node out of the primary component answered a rollback with
    1047 under load, and the saver raised it untyped)."""
    import psycopg
    import pymysql
    from sqlalchemy.exc import DBAPIError

    def reentrant(error: Exception, base: type[Exception]) -> DBAPIError:
        found = DBAPIError.instance(None, None, error, base)
        assert isinstance(found, DBAPIError) and not found.connection_invalidated
        return found

    mysql, postgres = query_builder("mysql"), query_builder("postgresql")
    wsrep = pymysql.err.OperationalError(1047, "WSREP has not yet prepared node")
    assert mysql.transient(reentrant(wsrep, pymysql.err.Error)) == "connection"
    gone = pymysql.err.OperationalError(2013, "Lost connection to server during query")
    assert mysql.transient(reentrant(gone, pymysql.err.Error)) == "connection"
    duplicate = pymysql.err.IntegrityError(1062, "Duplicate entry")
    assert mysql.transient(reentrant(duplicate, pymysql.err.Error)) is None
    closed = psycopg.OperationalError("server closed the connection unexpectedly")
    assert postgres.transient(reentrant(closed, psycopg.Error)) == "connection"
    unique = psycopg.errors.UniqueViolation("duplicate")
    assert postgres.transient(reentrant(unique, psycopg.Error)) is None


@pytest.fixture
def mariadb_database() -> Iterator[str]:
    """The URL of a fresh MariaDB database (dropped after the test)."""
    if "mariadb" not in BACKENDS:
        pytest.skip("MariaDB not in LGSA_TEST_BACKENDS")
    with fresh_database("mariadb") as url:
        yield url


def test_a_dead_migrators_lease_is_taken_over_when_it_expires(mariadb_database: str) -> None:
    """A process killed while migrating leaves its lease row behind; the next setup()
    waits for its expiry (on the server's clock), not forever and not for a raw error."""
    engine = create_engine(mariadb_database, poolclass=NullPool)
    now = text("SELECT UNIX_TIMESTAMP(NOW(6))")
    with engine.begin() as conn:
        conn.execute(text(f"CREATE TABLE lgsa_locks ({LOCKS_COLUMNS})"))
        conn.execute(
            text(
                "INSERT INTO lgsa_locks VALUES "
                "('lgsa/migrations', 'killed', UNIX_TIMESTAMP(NOW(6)) + 2)"
            )
        )
        expiry = conn.execute(text("SELECT expires_at FROM lgsa_locks")).scalar_one()
    with SQLAlchemySaver.from_conn_string(mariadb_database) as saver:
        saver.setup()
        with engine.connect() as conn:  # it ended once the lease had expired, not before
            assert conn.execute(now).scalar_one() >= expiry
        assert saver.get_tuple(CONFIG) is None
    engine.dispose()


def test_detect_conflicts_leaves_no_lock_rows(mariadb_database: str) -> None:
    """The namespace's row that serialises a put with detect_conflicts (MySQL/MariaDB) is
    deleted in the put's own transaction: lgsa_locks does not grow with threads."""
    with SQLAlchemySaver.from_conn_string(mariadb_database, detect_conflicts=True) as saver:
        saver.setup()
        for i in range(20):
            config = {"configurable": {"thread_id": f"t{i}", "checkpoint_ns": ""}}
            saver.put(config, empty_checkpoint(), {"source": "loop", "step": 1}, {})
        with saver.lock_thread("t0"):
            pass
        with saver.engine.connect() as conn:
            assert conn.execute(text("SELECT count(*) FROM lgsa_locks")).scalar() == 0


def _child_reads(url: str, expected: str, parent_engine_id: int, results: Any) -> None:
    saver = SQLAlchemySaver.from_conn_string(url)
    try:
        fresh = id(saver.engine) != parent_engine_id
        ok = all(
            (got := saver.get_tuple(CONFIG)) is not None
            and got.config["configurable"]["checkpoint_id"] == expected
            for _ in range(100)
        )
        results.put((fresh, ok))
    except BaseException as e:  # reported to the parent
        results.put((False, repr(e)))
    finally:
        saver.close()


@pytest.mark.parametrize("backend", [b for b in ("postgres", "mariadb") if b in BACKENDS])
def test_a_forked_child_gets_engines_of_its_own(backend: str) -> None:
    """from_conn_string shares engines within a process; a child made by fork() must not
    share the parent's pooled connections (their replies would mix)."""
    with fresh_database(backend) as url:
        parent = SQLAlchemySaver.from_conn_string(url)
        parent.setup()
        checkpoint = empty_checkpoint()
        parent.put(CONFIG, checkpoint, {}, {})
        assert parent.get_tuple(CONFIG) is not None  # a pooled connection exists
        context = multiprocessing.get_context("fork")
        results = context.Queue()
        children = [
            context.Process(
                target=_child_reads, args=(url, checkpoint["id"], id(parent.engine), results)
            )
            for _ in range(3)
        ]
        for child in children:
            child.start()
        outcomes = [results.get(timeout=60) for _ in children]
        for child in children:
            child.join(timeout=120)
        assert outcomes == [(True, True)] * 3, outcomes
        assert parent.get_tuple(CONFIG) is not None  # the parent's connections still work
        parent.close()
