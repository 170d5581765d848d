"""Retries are seen: each retried failure is a WARNING record of the package's retry
logger (what failed, the attempt, the seconds left, the URL masked, no traceback), giving
up an ERROR naming the typed error raised, and each is given to ``on_retry`` as a
:class:`RetryEvent`, in the thread that retries; a callback that raises changes nothing.

Outages are real: a TCP proxy to PostgreSQL stopped and started again
(:class:`tests.outage.Proxy`); on SQLite, a statement made to fail once as a lost
connection (SQLAlchemy's ``before_cursor_execute`` and ``handle_error`` events).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.base import empty_checkpoint
from sqlalchemy import event
from sqlalchemy.engine import ExceptionContext, make_url

from langgraph.checkpoint.sqlalchemy import (
    CheckpointConnectionError,
    RetryEvent,
    SQLAlchemySaver,
)
from langgraph.store.sqlalchemy import SQLAlchemyStore

from ..outage import Proxy
from ..provision import BACKENDS, new_saver_args

CONFIG = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
SAVER_LOG = "langgraph.checkpoint.sqlalchemy.retry"
STORE_LOG = "langgraph.store.sqlalchemy.retry"
#: A password in the URL (PostgreSQL trusts local connections and ignores it): it must
#: show in no record.
PASSWORD = "S3cretPw"


@pytest.fixture
def proxied_postgres(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[tuple[dict[str, Any], Proxy]]:
    """``(from_conn_string arguments, proxy)``: a fresh schema of the run's PostgreSQL
    database reached through a :class:`Proxy`, the URL holding :data:`PASSWORD`."""
    if "postgres" not in BACKENDS:
        pytest.skip("PostgreSQL not in LGSA_TEST_BACKENDS")
    args = new_saver_args("postgres", request, tmp_path)
    url = make_url(args["conn_string"])
    proxy = Proxy(url.port or 5432)
    url = url.set(port=proxy.port, password=PASSWORD)
    args["conn_string"] = url.render_as_string(hide_password=False)
    yield args, proxy
    proxy.stop()


def back_after(proxy: Proxy, retries: int, seen: list[RetryEvent]) -> Callable[[RetryEvent], None]:
    """An ``on_retry`` callback that adds each event to ``seen`` and starts ``proxy``
    again at the ``retries``-th: an outage that lasts until the call has met it that many
    times, however slow the machine."""

    def on_retry(event: RetryEvent) -> None:
        seen.append(event)
        if len(seen) == retries:
            proxy.start()

    return on_retry


def records(seen: list[logging.LogRecord], name: str, level: int) -> list[logging.LogRecord]:
    """The records of logger ``name`` at ``level`` among ``seen``."""
    return [r for r in seen if r.name == name and r.levelno == level]


def assert_retries_logged(warnings: list[logging.LogRecord], kind: str) -> None:
    assert warnings
    for record in warnings:
        message = record.getMessage()
        assert f"({kind} failure)" in message, message
        assert "left of retry_timeout" in message and "retrying in" in message, message
        assert "***@127.0.0.1" in message and PASSWORD not in message, message
        assert record.exc_info is None  # no traceback at WARNING
    attempts = [int(r.getMessage().split("attempt ")[1].split()[0]) for r in warnings]
    assert attempts == list(range(1, len(warnings) + 1))


def assert_sane(
    events: list[RetryEvent], timeout: float, spent: float, *, gave_up: bool = False
) -> None:
    """``events`` of one call that took ``spent`` seconds, measured around it."""
    assert events
    assert [e.attempt for e in events] == list(range(1, len(events) + 1))
    assert [e.gave_up for e in events] == [False] * (len(events) - 1) + [gave_up]
    elapsed = [e.elapsed for e in events]
    assert elapsed == sorted(elapsed) and elapsed[0] >= 0 and elapsed[-1] <= spent  # seconds
    for e in events:
        assert e.kind == "connection"
        assert e.remaining == pytest.approx(max(timeout - e.elapsed, 0.0))
        assert isinstance(e.error, Exception)
    with pytest.raises(dataclasses.FrozenInstanceError):
        events[0].attempt = 9  # type: ignore[misc]


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_a_put_through_an_outage_logs_each_retry_and_reports_it(
    proxied_postgres: tuple[dict[str, Any], Proxy],
    mode: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    args, proxy = proxied_postgres
    events: list[RetryEvent] = []
    threads: list[int] = []

    back = back_after(proxy, 2, events)  # the lost connection, then a refusal

    def on_retry(event: RetryEvent) -> None:
        threads.append(threading.get_ident())
        back(event)

    caplog.set_level(logging.WARNING, logger="langgraph")
    saver = SQLAlchemySaver.from_conn_string(
        args.pop("conn_string"), retry_timeout=15, on_retry=on_retry, **args
    )
    try:
        saver.setup()
        await saver.aget_tuple(CONFIG)
        checkpoint = empty_checkpoint()
        callers: list[int] = []

        def put() -> Any:
            callers.append(threading.get_ident())
            return saver.put(CONFIG, checkpoint, {}, {})

        proxy.stop()
        started = time.monotonic()
        if mode == "sync":
            await asyncio.to_thread(put)
        else:
            callers.append(threading.get_ident())  # the event loop's thread
            await saver.aput(CONFIG, checkpoint, {}, {})
        spent = time.monotonic() - started
        # The put's retries only: the other engine's pooled connection was cut too.
        seen, put_events, put_threads = list(caplog.records), list(events), list(threads)
        stored = saver.get_tuple(CONFIG)
        assert stored is not None and stored.checkpoint["id"] == checkpoint["id"]
    finally:
        await saver.aclose()
    warnings = records(seen, SAVER_LOG, logging.WARNING)
    assert len(warnings) >= 2  # the lost connection, then refusals until the restart
    assert_retries_logged(warnings, "connection")
    assert not [r for r in seen if r.levelno >= logging.ERROR]
    assert len(put_events) == len(warnings)
    assert_sane(put_events, 15, spent)
    assert set(put_threads) == set(callers)  # called by the thread that retried


def test_a_callback_that_raises_does_not_break_the_retry(
    proxied_postgres: tuple[dict[str, Any], Proxy], caplog: pytest.LogCaptureFixture
) -> None:
    args, proxy = proxied_postgres
    calls: list[RetryEvent] = []

    def broken(event: RetryEvent) -> None:
        calls.append(event)
        if len(calls) == 1:
            proxy.start()  # the outage ends once the put has met it
        raise RuntimeError("metrics backend down")

    caplog.set_level(logging.WARNING, logger="langgraph")
    with SQLAlchemySaver.from_conn_string(
        args.pop("conn_string"), on_retry=broken, **args
    ) as saver:
        saver.setup()
        proxy.stop()
        saver.put(CONFIG, empty_checkpoint(), {}, {})
        assert saver.get_tuple(CONFIG) is not None
    assert calls
    failures = records(caplog.records, SAVER_LOG, logging.ERROR)
    assert len(failures) == len(calls)
    for record in failures:
        assert "on_retry callback" in record.getMessage()
        assert record.exc_info is not None and record.exc_info[0] is RuntimeError


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_giving_up_logs_an_error_naming_the_typed_error(
    proxied_postgres: tuple[dict[str, Any], Proxy],
    mode: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    args, proxy = proxied_postgres
    events: list[RetryEvent] = []
    caplog.set_level(logging.WARNING, logger="langgraph")
    saver = SQLAlchemySaver.from_conn_string(
        args.pop("conn_string"), retry_timeout=0.5, on_retry=events.append, **args
    )
    try:
        saver.setup()
        await saver.aget_tuple(CONFIG)
        proxy.stop()
        started = time.monotonic()
        with pytest.raises(CheckpointConnectionError, match="cannot reach") as raised:
            if mode == "sync":
                saver.put(CONFIG, empty_checkpoint(), {}, {})
            else:
                await saver.aput(CONFIG, empty_checkpoint(), {}, {})
        spent = time.monotonic() - started
    finally:
        proxy.start()  # for the fixture's stop
        await saver.aclose()
    (error,) = records(caplog.records, SAVER_LOG, logging.ERROR)
    message = error.getMessage()
    assert "giving up (connection failure): CheckpointConnectionError: cannot reach" in message
    assert PASSWORD not in message and error.exc_info is None
    warnings = records(caplog.records, SAVER_LOG, logging.WARNING)
    assert_retries_logged(warnings, "connection")
    assert_sane(events, 0.5, spent, gave_up=True)
    assert len(events) == len(warnings) + 1
    assert raised.value.__cause__ is events[-1].error


def test_the_stores_retries_log_on_the_stores_logger(
    proxied_postgres: tuple[dict[str, Any], Proxy], caplog: pytest.LogCaptureFixture
) -> None:
    args, proxy = proxied_postgres
    events: list[RetryEvent] = []
    caplog.set_level(logging.WARNING, logger="langgraph")
    with SQLAlchemyStore.from_conn_string(
        args.pop("conn_string"), on_retry=back_after(proxy, 1, events), **args
    ) as store:
        store.setup()
        store.search(("a",))
        proxy.stop()
        started = time.monotonic()
        store.put(("a",), "k", {"v": 1})
        spent = time.monotonic() - started
        item = store.get(("a",), "k")
        assert item is not None and item.value == {"v": 1}
    warnings = records(caplog.records, STORE_LOG, logging.WARNING)
    assert_retries_logged(warnings, "connection")
    assert not records(caplog.records, SAVER_LOG, logging.WARNING)
    assert len(events) == len(warnings)
    assert_sane(events, 15, spent)


def fail_once(engine: Any, statement_start: str) -> list[str]:
    """Make the first statement of ``engine`` starting with ``statement_start`` fail as a
    lost connection (SQLite has no outage of its own). Returns the statements failed."""
    failed: list[str] = []

    @event.listens_for(engine, "before_cursor_execute")
    def fail(conn: Any, cursor: Any, statement: str, *rest: Any) -> None:
        if not failed and statement.lstrip().upper().startswith(statement_start):
            failed.append(statement)
            raise sqlite3.OperationalError("disk I/O error (made by the test)")

    @event.listens_for(engine, "handle_error")
    def lost(context: ExceptionContext) -> None:
        if "made by the test" in str(context.original_exception):
            context.is_disconnect = True

    return failed


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_a_sqlite_put_retried_once_is_logged_and_reported(
    tmp_path: Path, mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    events: list[RetryEvent] = []
    caplog.set_level(logging.WARNING, logger="langgraph")
    saver = SQLAlchemySaver.from_conn_string(
        f"sqlite:///{tmp_path / 'db.sqlite'}", on_retry=events.append
    )
    try:
        saver.setup()
        failed = fail_once(saver.engine, "INSERT")
        if mode == "sync":
            saver.put(CONFIG, empty_checkpoint(), {}, {})
        else:
            await saver.aput(CONFIG, empty_checkpoint(), {}, {})
        assert failed and saver.get_tuple(CONFIG) is not None
    finally:
        await saver.aclose()
    (warning,) = records(caplog.records, SAVER_LOG, logging.WARNING)
    message = warning.getMessage()
    assert message.startswith("attempt 1 failed (connection failure) at sqlite+pysqlite:///")
    assert "OperationalError: disk I/O error (made by the test)" in message
    assert "retrying in 0.00 s" in message  # a lost connection is retried at once
    (retried,) = events
    assert (retried.attempt, retried.kind, retried.gave_up) == (1, "connection", False)


@pytest.mark.parametrize("bad", [5, "print", [print]])
def test_on_retry_must_be_callable(bad: object, tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    for make in (SQLAlchemySaver.from_conn_string, SQLAlchemyStore.from_conn_string):
        with pytest.raises(TypeError, match="on_retry must be a callable taking a RetryEvent"):
            make(url, on_retry=bad)
    with SQLAlchemySaver.from_conn_string(url) as saver:
        for cls in (SQLAlchemySaver, SQLAlchemyStore):
            with pytest.raises(TypeError, match="on_retry"):
                cls(saver.engine, on_retry=bad)
        SQLAlchemyStore(saver.engine, on_retry=None).close()
