"""``setup()`` migrates before it returns, however it is called; ``asetup()`` keeps the event
loop free. Saver and store, on every backend.

``setup()`` once read its caller's bytecode and handed the literal ``await x.setup()`` to
``asetup()``; every other form (``asyncio.wait_for``, ``gather``, ``create_task``,
``shield``, a wrapper, a subclass) migrated on the loop's thread. Now every form does
the same: the migration runs on the calling thread, inside ``setup()``, which returns an
already-done awaitable (``await saver.setup()`` keeps working and does nothing more).
``asetup()`` is the non-blocking path: a heartbeat task of the loop keeps beating while
``asetup()`` waits for the migration lock that another connection holds, and the holder
lets go only at a point the test chooses.
"""

from __future__ import annotations

import asyncio
import inspect
import re
import sqlite3
import threading
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Connection, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.pool import NullPool

import langgraph.checkpoint.sqlalchemy as saver_package
import langgraph.store.sqlalchemy as store_package
from langgraph.checkpoint.sqlalchemy import SQLAlchemySaver, migrate
from langgraph.checkpoint.sqlalchemy.dialects import WRITE_OPTION, query_builder
from langgraph.store.sqlalchemy import SQLAlchemyStore

from ..provision import new_saver_args

#: Seconds any wait of these tests may last before it counts as a failure.
WAIT = 120.0


class WrappedSaver(SQLAlchemySaver):
    """A subclass whose ``setup`` hands on what the base returns."""

    def setup(self) -> Awaitable[None]:
        return super().setup()


class AwaitingSaver(SQLAlchemySaver):
    """A subclass whose ``setup`` is a coroutine awaiting the base's."""

    async def setup(self) -> None:  # type: ignore[override]
        await super().setup()


class WrappedStore(SQLAlchemyStore):
    def setup(self) -> Awaitable[None]:
        return super().setup()


class AwaitingStore(SQLAlchemyStore):
    async def setup(self) -> None:  # type: ignore[override]
        await super().setup()


CLASSES: dict[str, dict[str, Any]] = {
    "saver": {"plain": SQLAlchemySaver, "wrapped": WrappedSaver, "awaiting": AwaitingSaver},
    "store": {"plain": SQLAlchemyStore, "wrapped": WrappedStore, "awaiting": AwaitingStore},
}


def _helper(owner: Any) -> Awaitable[None]:
    """A sync wrapper that returns ``setup()``'s awaitable for its caller to await."""
    return owner.setup()  # type: ignore[no-any-return]


async def _literal(owner: Any) -> None:
    await owner.setup()


async def _wait_for(owner: Any) -> None:
    await asyncio.wait_for(owner.setup(), 2)


async def _gather(owner: Any) -> None:
    await asyncio.gather(owner.setup())


async def _create_task(owner: Any) -> None:
    await asyncio.create_task(owner.setup())


async def _shield(owner: Any) -> None:
    await asyncio.shield(owner.setup())


async def _wrapper(owner: Any) -> None:
    await _helper(owner)


async def _kept(owner: Any) -> None:
    pending = owner.setup()
    await asyncio.sleep(0)  # other tasks may run before it is awaited
    await pending


#: Each form: (the class of the owner, the coroutine that calls its setup()).
FORMS: dict[str, tuple[str, Callable[[Any], Awaitable[None]]]] = {
    "await x.setup()": ("plain", _literal),
    "wait_for(x.setup(), 2)": ("plain", _wait_for),
    "gather(x.setup())": ("plain", _gather),
    "create_task(x.setup())": ("plain", _create_task),
    "shield(x.setup())": ("plain", _shield),
    "a sync wrapper's result awaited": ("plain", _wrapper),
    "kept, awaited later": ("plain", _kept),
    "subclass returning super().setup()": ("wrapped", _literal),
    "subclass awaiting super().setup()": ("awaiting", _literal),
}


def _args(backend: str, request: pytest.FixtureRequest, folder: Path) -> dict[str, Any]:
    folder.mkdir(exist_ok=True)
    return new_saver_args(backend, request, folder)


def _migrated(owner: Any) -> bool:
    """Whether the owner's database is at the head revision (read on a connection of its
    own engine, outside the owner's doors)."""
    with owner.engine.connect() as conn:
        return migrate.is_at_head(conn, schema=owner.schema)


@contextmanager
def _statement_threads(owner: Any) -> Iterator[list[int]]:
    """The thread of each statement run on the owner's sync engine inside the block."""
    seen: list[int] = []

    def record(*_: Any) -> None:
        seen.append(threading.get_ident())

    event.listen(owner.engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:  # the engine may be shared with later owners of this process
        event.remove(owner.engine, "before_cursor_execute", record)


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("kind", CLASSES)
async def test_every_form_of_setup_migrates_on_the_calling_thread(
    kind: str, form: str, backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """Whatever wraps the call, the migration's statements run on the loop's thread (the
    caller's), before ``setup()`` returns: no form is handed to a worker thread."""
    which, call = FORMS[form]
    owner = CLASSES[kind][which].from_conn_string(**_args(backend, request, tmp_path / "db"))
    try:
        assert not _migrated(owner)
        with _statement_threads(owner) as threads:
            await asyncio.wait_for(call(owner), WAIT)
        assert _migrated(owner), form
        assert threads, form  # the migration ran statements on this engine
        assert set(threads) == {threading.get_ident()}, form
    finally:
        await owner.aclose()


@pytest.mark.parametrize("kind", CLASSES)
async def test_setup_returns_a_done_awaitable_after_migrating(
    kind: str, backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """A harness that checks ``inspect.isawaitable(x.setup())`` and awaits it gets a
    migrated database either way; awaiting runs nothing more."""
    owner = CLASSES[kind]["plain"].from_conn_string(**_args(backend, request, tmp_path / "db"))
    try:
        pending = owner.setup()
        assert _migrated(owner)
        assert inspect.isawaitable(pending)
        with _statement_threads(owner) as threads:
            assert await pending is None
            assert await pending is None  # as often as it is awaited
        assert threads == []  # awaiting ran nothing
    finally:
        await owner.aclose()


# -- asetup() keeps the loop free while another connection holds the migration lock -----


class LockHolder:
    """The migration lock of a database, held by a connection of another thread from
    :meth:`start` until :meth:`release` (or, should the test never get there, until
    :data:`WAIT` seconds have passed, so that a blocked loop ends in a failure rather
    than a hang).

    SQLite: a ``BEGIN IMMEDIATE`` transaction (the lock ``setup()`` takes, see
    ``migration_lock``); PostgreSQL and MariaDB: the dialect's ``migration_lock``.
    """

    def __init__(self, backend: str, url: str, schema: str | None) -> None:
        self._backend, self._url, self._schema = backend, url, schema
        self._taken, self._release = threading.Event(), threading.Event()
        self._errors: list[BaseException] = []
        self._thread = threading.Thread(target=self._hold, name="lock-holder", daemon=True)

    def start(self) -> None:
        self._thread.start()
        assert self._taken.wait(WAIT), self._errors
        assert not self._errors, self._errors

    def release(self) -> None:
        self._release.set()
        if self._thread.ident is not None:  # started
            self._thread.join(WAIT)
        assert not self._errors, self._errors

    def _hold(self) -> None:
        try:
            if self._backend == "sqlite-file":
                self._hold_sqlite()
            else:
                self._hold_server()
        except BaseException as e:  # reported by start() and release()
            self._errors.append(e)
            self._taken.set()

    def _hold_sqlite(self) -> None:
        path = make_url(self._url).database
        assert path is not None
        conn = sqlite3.connect(path, isolation_level=None)
        try:
            # WAL, as the saver's connections set it, written to the file (by a first
            # write) so that they find it set and only the migration waits.
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA user_version = 1")
            conn.execute("BEGIN IMMEDIATE")
            self._taken.set()
            self._release.wait(WAIT)
            conn.rollback()
        finally:
            conn.close()

    def _hold_server(self) -> None:
        engine = create_engine(self._url, poolclass=NullPool)
        qb = query_builder(engine.dialect.name)
        # The schema on the engine, as the owner's doors give it (MariaDB's lock takes
        # its lease through an engine made with the connection's engine's options).
        schema_map = {"schema_translate_map": {None: self._schema}} if self._schema else {}
        try:
            with (
                engine.execution_options(**schema_map).begin() as conn,
                qb.migration_lock(conn),
            ):
                self._taken.set()
                self._release.wait(WAIT)
        finally:
            engine.dispose()


@pytest.mark.parametrize("kind", CLASSES)
async def test_asetup_keeps_the_loop_free_while_it_waits_for_the_migration_lock(
    kind: str, backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    if backend == "sqlite-memory":
        pytest.skip("an in-memory database has no other connection to hold its lock")
    args = _args(backend, request, tmp_path / "db")
    owner = CLASSES[kind]["plain"].from_conn_string(**args)
    at_lock = threading.Event()

    def on_connect(conn: Connection) -> None:
        if conn.get_execution_options().get(WRITE_OPTION):
            at_lock.set()  # the migration's write connection: next, its lock

    event.listen(owner.engine, "engine_connect", on_connect)
    holder = LockHolder(backend, args["conn_string"], args.get("schema"))
    beats = 0

    async def heartbeat() -> None:
        nonlocal beats
        while True:
            beats += 1
            await asyncio.sleep(0)

    beating = asyncio.create_task(heartbeat())
    try:
        holder.start()
        setting_up = asyncio.create_task(owner.asetup())
        # The migration reaches the lock in its worker thread, the loop running all along.
        assert await asyncio.to_thread(at_lock.wait, WAIT)
        mark = beats
        while beats < mark + 100:  # the heartbeat beats while asetup() waits at the lock
            await asyncio.sleep(0)
        # The lock is still held: it cannot have finished (unless it failed).
        assert not setting_up.done(), setting_up.exception()
        holder.release()  # the point the test chooses
        await asyncio.wait_for(setting_up, WAIT)
        assert _migrated(owner)
    finally:
        beating.cancel()
        holder.release()
        event.remove(owner.engine, "engine_connect", on_connect)
        await owner.aclose()


def test_no_caller_frame_is_inspected() -> None:
    """Nothing in the packages reads a caller's frame or bytecode to decide what to do."""
    roots = [Path(saver_package.__file__).parent, Path(store_package.__file__).parent]
    frame_reading = re.compile(r"\b(f_back|f_lasti|currentframe|import dis|dis\.\w)")
    found = [
        f"{path}: {match.group()}"
        for root in roots
        for path in sorted(root.rglob("*.py"))
        for match in frame_reading.finditer(path.read_text(encoding="utf-8"))
    ]
    assert found == []
