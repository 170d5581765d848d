"""Transient failures on one server, no cluster needed: a server that is down when the
saver starts, a read-only database, and the retry's bounds (issue 14, item 2). Every
failure is a typed error after the saver's ``retry_timeout``; nothing is raw."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterator

import pytest
from langgraph.checkpoint.base import empty_checkpoint
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import OperationalError
from sqlalchemy.pool import NullPool

from langgraph.checkpoint.sqlalchemy import (
    CheckpointConnectionError,
    CheckpointReadOnlyError,
    SQLAlchemySaver,
)
from langgraph.checkpoint.sqlalchemy.dialects import query_builder

from .provision import BACKENDS, POSTGRES_ADMIN_URL

CONFIG = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
#: Ports nothing listens on (the servers of the suite are on 5432 and 3306).
DOWN = {
    "postgres": "postgresql+psycopg://root@127.0.0.1:1/test",
    "mariadb": "mysql+pymysql://root@127.0.0.1:1/test",
}


@pytest.mark.parametrize("backend", [b for b in ("postgres", "mariadb") if b in BACKENDS])
def test_a_server_down_at_start_is_a_typed_error_after_the_retry_timeout(backend: str) -> None:
    saver = SQLAlchemySaver.from_conn_string(DOWN[backend], retry_timeout=0.5)
    started = time.monotonic()
    with pytest.raises(CheckpointConnectionError, match=r"cannot reach the database at .*:1/") as e:
        saver.setup()
    assert time.monotonic() - started < 5
    attempts = int(str(e.value).split(" attempts over ")[0].rsplit("(", 1)[1])
    assert attempts >= 3  # retried with pauses, not given up at the first refusal
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
    name = f"lgsa_ro_{uuid.uuid4().hex[:10]}"
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
