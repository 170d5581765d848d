"""A process forked from one that used a saver or a store works there at once: nothing
process-wide that the package keeps (worker threads and their counts, locks, caches,
pooled connections) reaches the child in a state that stops it.

``fork()`` (multiprocessing's fork start method, gunicorn ``--preload``, Celery's prefork
pool) copies the calling thread only, and every lock and counter as it stood at that
moment. Each test forks (``os.fork()``) and has the child run its calls; a child that
does not answer within :data:`CHILD_TIMEOUT` seconds is killed and the test fails (a
hang is a failure through the timeout, never waited out by a sleep).

- After sync and async use of a saver and of a store, on every backend, the child
  completes sync and async calls on the owner it inherited (engines of the caller's
  own after SQLAlchemy's ``engine.dispose(close=False)``; ``from_conn_string``'s need
  nothing) and on a new one; the parent's connections keep working, and the child's
  writes are in the parent's database.
- The hang after a fork: after one async call on SQLite, the child's first async
  call on a new saver, a new file and a new loop completed never (the SQLite worker
  threads' counts survived the fork, the threads did not).
- A fork while another thread of the parent holds each lock that the child resets (or
  is inside a worker-thread job): the child's calls that need the lock complete.
- The store's TTL sweeper thread, which the child does not inherit, can be started
  there again.

What a child connects with is tested beside: ``test_held_connection.py`` (a lane's held
connection is the parent's) and ``tests/reliability/test_transient.py``
(``from_conn_string``'s shared engines are not shared with a child).
"""

from __future__ import annotations

import asyncio
import os
import pickle
import select
import signal
import threading
import time
import traceback
import uuid
import warnings
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.base import empty_checkpoint
from sqlalchemy import create_engine
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from langgraph.checkpoint.sqlalchemy import SQLAlchemySaver, ThreadLockTimeout, migrate
from langgraph.checkpoint.sqlalchemy._engine import cursor, hop
from langgraph.checkpoint.sqlalchemy._engine.engines import resolve_urls
from langgraph.checkpoint.sqlalchemy.dialects import sqlite as sqlite_dialect
from langgraph.store.sqlalchemy import SQLAlchemyStore, _reads

from ..checkpoints import next_checkpoint
from ..provision import BACKENDS, new_saver_args

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork() on this platform")

#: Seconds a forked child has to answer before it counts as hung.
CHILD_TIMEOUT = 120.0
#: Seconds a lock is held by another thread at most (released when the test is done).
HOLD_TIMEOUT = 2 * CHILD_TIMEOUT

NS = ("fork", "items")
KINDS = ("saver", "store")


def in_child(body: Callable[[], Any], timeout: float = CHILD_TIMEOUT) -> Any:
    """``body()`` run in a process forked from this one, and its (picklable) result.

    The child never returns into pytest: it sends its result or its traceback through a
    pipe and ends with ``os._exit``.

    Raises:
        pytest.fail.Exception: The child failed (its traceback in the message), died, or
            sent nothing within ``timeout`` seconds (it is killed then).
    """
    read_end, write_end = os.pipe()
    with warnings.catch_warnings():
        # Python 3.12+ warns that a fork of a process with threads may deadlock the
        # child: that it does not is what these tests check.
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:  # the child
        code = 1
        try:
            os.close(read_end)
            try:
                outcome: tuple[str, Any] = ("ok", body())
            except BaseException:  # reported to the parent
                outcome = ("error", traceback.format_exc())
            with os.fdopen(write_end, "wb") as out:
                pickle.dump(outcome, out)
            code = 0
        finally:
            os._exit(code)
    os.close(write_end)
    received = bytearray()
    try:
        while True:
            ready, _, _ = select.select([read_end], [], [], timeout)
            if not ready:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                pytest.fail(f"the forked child hung: no answer in {timeout:.0f} s")
            chunk = os.read(read_end, 1 << 16)
            if not chunk:
                break
            received += chunk
    finally:
        os.close(read_end)
    _, status = os.waitpid(pid, 0)
    if not received:
        pytest.fail(f"the forked child died (wait status {status})")
    kind, value = pickle.loads(bytes(received))
    if kind == "error":
        pytest.fail(f"the forked child failed:\n{value}")
    return value


def until_a_worker_is_idle() -> None:
    """Wait until a SQLite async worker thread is idle: one hands its result over before
    it counts itself idle, and a fork between the two would find it busy (the parent's
    count at the fork is what the child inherits)."""
    deadline = time.monotonic() + CHILD_TIMEOUT
    while not hop._idle:
        assert time.monotonic() < deadline, "no worker thread became idle"
        time.sleep(0.001)


@contextmanager
def held_by_another_thread(held: AbstractContextManager[Any]) -> Iterator[None]:
    """``held`` (a lock, a thread lock) entered by another thread of this process for the
    whole block, so at a fork made in it."""
    taken, done = threading.Event(), threading.Event()
    errors: list[BaseException] = []

    def hold() -> None:
        try:
            with held:
                taken.set()
                done.wait(HOLD_TIMEOUT)
        except BaseException as e:  # reported below
            errors.append(e)
            taken.set()

    thread = threading.Thread(target=hold, name="lock-holder", daemon=True)
    thread.start()
    assert taken.wait(CHILD_TIMEOUT) and not errors, errors
    try:
        yield
    finally:
        done.set()
        thread.join(CHILD_TIMEOUT)


# -- what the tests do with a saver or a store --------------------------------------------


def _config(who: str) -> Any:
    return {"configurable": {"thread_id": who, "checkpoint_ns": ""}}


def write(owner: Any, who: str) -> None:
    if isinstance(owner, SQLAlchemyStore):
        owner.put(NS, who, {"by": who})
    else:
        owner.put(_config(who), empty_checkpoint(), {"source": "input", "step": -1}, {})


def read(owner: Any, who: str) -> bool:
    if isinstance(owner, SQLAlchemyStore):
        return owner.get(NS, who) is not None
    return owner.get_tuple(_config(who)) is not None


async def awrite_read(owner: Any, who: str) -> bool:
    """An async write of ``who``, then whether an async read finds it."""
    if isinstance(owner, SQLAlchemyStore):
        await owner.aput(NS, who, {"by": who})
        return await owner.aget(NS, who) is not None
    await owner.aput(_config(who), empty_checkpoint(), {"source": "input", "step": -1}, {})
    return await owner.aget_tuple(_config(who)) is not None


async def aused_new(owner: Any, who: str) -> bool:
    """``asetup()``, an async write and read on a new owner, then ``aclose()``."""
    try:
        await owner.asetup()
        return await awrite_read(owner, who)
    finally:
        await owner.aclose()


def _cls(kind: str) -> Any:
    return SQLAlchemyStore if kind == "store" else SQLAlchemySaver


# -- after sync and async use, on every backend ---------------------------------------------


@pytest.mark.parametrize("engines", ["from_conn_string", "own engines"])
@pytest.mark.parametrize("kind", KINDS)
def test_a_forked_child_completes_sync_and_async_calls(
    kind: str, engines: str, backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """The parent forks with its event loop still open (as a server that forks from a
    running application would), after sync and async calls."""
    if backend == "sqlite-memory" and engines == "own engines":
        pytest.skip("an in-memory database of one's own engines is one per connection")
    args = new_saver_args(backend, request, tmp_path)
    made: list[Any] = []
    if engines == "own engines":
        urls = resolve_urls(args["conn_string"])
        made = [create_engine(urls.sync), create_async_engine(urls.async_)]
        owner = _cls(kind)(*made, schema=args.get("schema"))
    else:
        owner = _cls(kind).from_conn_string(**args)
    loop = asyncio.new_event_loop()
    try:
        owner.setup()
        write(owner, "parent")
        assert read(owner, "parent")
        assert loop.run_until_complete(awrite_read(owner, "parent-async"))
        if backend.startswith("sqlite"):
            until_a_worker_is_idle()

        def child() -> dict[str, bool]:
            seen: dict[str, bool] = {}
            if engines == "own engines":
                # SQLAlchemy's rule for a child: a new pool, the parent's connections
                # left alone (docs/configuration.md).
                owner.engine.dispose(close=False)
            seen["inherited, sync"] = read(owner, "parent") and read(owner, "parent-async")
            write(owner, "child")
            seen["inherited, async"] = asyncio.run(awrite_read(owner, "child-async"))
            owner.close()
            new = _cls(kind).from_conn_string(**args)
            new.setup()
            write(new, "child-new")
            seen["new, sync"] = read(new, "child-new")
            new.close()
            again = _cls(kind).from_conn_string(**args)
            seen["new, async"] = asyncio.run(aused_new(again, "child-new-async"))
            return seen

        assert in_child(child) == dict.fromkeys(
            ["inherited, sync", "inherited, async", "new, sync", "new, async"], True
        )
        # The parent's connections still work, sync and async, on the open loop.
        write(owner, "parent-after")
        assert read(owner, "parent-after")
        assert loop.run_until_complete(awrite_read(owner, "parent-after-async"))
        in_parent = all(read(owner, who) for who in ("child", "child-async", "child-new"))
        # An in-memory database is copied at the fork: the child wrote to its copy.
        assert in_parent is (backend != "sqlite-memory")
    finally:
        loop.run_until_complete(owner.aclose())
        for engine in made:
            if isinstance(engine, AsyncEngine):
                loop.run_until_complete(engine.dispose())
            else:
                engine.dispose()
        loop.close()


# -- the hang after a fork: the reproducer ------------------------------------------------------


async def _first_async_calls(kind: str, path: Path) -> bool:
    return await aused_new(_cls(kind).from_conn_string(f"sqlite:///{path}"), "first")


@pytest.mark.parametrize("kind", KINDS)
def test_after_one_async_call_on_sqlite_a_child_s_first_async_call_completes(
    kind: str, tmp_path: Path
) -> None:
    """One async call on SQLite in the parent (which leaves a worker thread idle), then
    fork: the child's first async SQLite call, on a new owner, a new file and a new
    loop, completes."""
    with _cls(kind).from_conn_string(f"sqlite:///{tmp_path / 'parent.sqlite'}") as owner:
        owner.setup()

        async def one_call() -> None:
            if kind == "store":
                await owner.aget(NS, "a")
            else:
                await owner.aget_tuple(_config("a"))

        asyncio.run(one_call())
        until_a_worker_is_idle()
        assert in_child(lambda: asyncio.run(_first_async_calls(kind, tmp_path / "child.sqlite")))


# -- a fork while another thread of the parent holds a lock ------------------------------------


#: A lock held at the fork: given the test's folder and request, the context in which
#: another thread holds it, yielding what the child runs (which returns True).
Case = Callable[[Path, pytest.FixtureRequest], AbstractContextManager[Callable[[], Any]]]


def _sqlite_saver(path: Path) -> SQLAlchemySaver:
    saver = SQLAlchemySaver.from_conn_string(f"sqlite:///{path}")
    saver.setup()
    return saver


@contextmanager
def _hop_job_running(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Callable[[], Any]]:
    """A worker thread busy with a job (blocked until the test is done) and another one
    idle (after an async call): the child's first async call on a new saver."""
    started, finish = threading.Event(), threading.Event()

    def job() -> None:
        started.set()
        finish.wait(HOLD_TIMEOUT)

    runner = threading.Thread(target=lambda: asyncio.run(hop.run(job)), daemon=True)
    runner.start()
    assert started.wait(CHILD_TIMEOUT)
    with _sqlite_saver(tmp_path / "parent.sqlite") as saver:
        asyncio.run(saver.aget_tuple(_config("a")))  # a second worker, idle after it
        until_a_worker_is_idle()
        try:
            yield lambda: asyncio.run(_first_async_calls("saver", tmp_path / "child.sqlite"))
        finally:
            finish.set()
            runner.join(CHILD_TIMEOUT)


@contextmanager
def _hop_lock(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Callable[[], Any]]:
    with _sqlite_saver(tmp_path / "parent.sqlite") as saver:
        asyncio.run(saver.aget_tuple(_config("a")))
        until_a_worker_is_idle()
        with held_by_another_thread(hop._lock):
            yield lambda: asyncio.run(_first_async_calls("saver", tmp_path / "child.sqlite"))


@contextmanager
def _alembic_lock(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Callable[[], Any]]:
    """A migration running in another thread: the child's ``setup()`` of a database at
    an older revision migrates it with Alembic."""
    url = f"sqlite:///{tmp_path / 'old.sqlite'}"
    engine = create_engine(url)
    with engine.begin() as conn:
        migrate.upgrade(conn, "0001_initial")
    engine.dispose()

    def child() -> bool:
        with SQLAlchemySaver.from_conn_string(url) as saver:
            saver.setup()
            write(saver, "child")
            return read(saver, "child")

    with held_by_another_thread(migrate._ALEMBIC_LOCK):
        yield child


@contextmanager
def _compile_lock(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Callable[[], Any]]:
    """A statement being compiled in another thread: the child compiles its own."""

    def child() -> bool:
        cursor._CACHE.clear()  # so that its put compiles, whatever this process ran before
        cursor._KEEP.clear()
        with _sqlite_saver(tmp_path / "child.sqlite") as saver:
            write(saver, "child")
            return read(saver, "child")

    with held_by_another_thread(cursor._LOCK):
        yield child


@contextmanager
def _memory_thread_lock(
    tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[Callable[[], Any]]:
    """``lock_thread`` on an in-memory database, held by another thread (its lock is a
    lock of the process) and by the thread that forks: the child may take the first
    (that thread is not in the child), not the second (the forking thread still holds
    it there)."""
    with SQLAlchemySaver.from_conn_string(":memory:") as saver:
        saver.setup()

        def child() -> bool:
            with saver.lock_thread("other", timeout=CHILD_TIMEOUT):
                pass
            with pytest.raises(ThreadLockTimeout), saver.lock_thread("mine", timeout=0.2):
                pass
            return True

        with held_by_another_thread(saver.lock_thread("other")), saver.lock_thread("mine"):
            yield child


@contextmanager
def _memory_locks_guard(
    tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[Callable[[], Any]]:
    with SQLAlchemySaver.from_conn_string(":memory:") as saver:
        saver.setup()

        def child() -> bool:
            with saver.lock_thread("t", timeout=CHILD_TIMEOUT):
                return True

        with held_by_another_thread(sqlite_dialect._MEMORY_LOCKS_GUARD):
            yield child


@contextmanager
def _search_params_lock(
    tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[Callable[[], Any]]:
    """A search's filter parameters being kept by another thread: the child keeps those
    of a filter never seen before."""
    with SQLAlchemyStore.from_conn_string(f"sqlite:///{tmp_path / 'store.sqlite'}") as store:
        store.setup()
        unseen = uuid.uuid4().hex  # a filter value this process has not searched for
        store.put(NS, "a", {"k": unseen})

        def child() -> bool:
            return [item.key for item in store.search(NS, filter={"k": unseen})] == ["a"]

        with held_by_another_thread(_reads._PARAMS_LOCK):
            yield child


def _per_loop_lock(backend: str) -> Case:
    @contextmanager
    def case(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Callable[[], Any]]:
        """The per-loop engines' lock, held by another thread: the child releases the
        shared engines under it (at the fork), and adds its loop's engine under it."""
        if backend not in BACKENDS:
            pytest.skip(f"{backend} not in LGSA_TEST_BACKENDS")
        with SQLAlchemySaver.from_conn_string(
            **new_saver_args(backend, request, tmp_path)
        ) as saver:
            saver.setup()
            asyncio.run(saver.aget_tuple(_config("a")))

            def child() -> bool:
                write(saver, "child")
                return asyncio.run(awrite_read(saver, "child-async")) and read(saver, "child")

            with held_by_another_thread(saver._runner.per_loop._lock):
                yield child

    return case


@contextmanager
def _rounds_lock(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Callable[[], Any]]:
    """The store's lock of its rounds' queues, held by another thread: the child's first
    async call queues on a new loop."""
    with SQLAlchemyStore.from_conn_string(f"sqlite:///{tmp_path / 'store.sqlite'}") as store:
        store.setup()
        asyncio.run(store.aput(NS, "a", {"k": "v"}))

        def child() -> bool:
            return asyncio.run(awrite_read(store, "child"))

        with held_by_another_thread(store._rounds._lock):
            yield child


@contextmanager
def _value_cache_lock(
    tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[Callable[[], Any]]:
    """The saver's cache of serialised values, being updated by another thread: the
    child's put keeps a value of its own."""
    with _sqlite_saver(tmp_path / "db.sqlite") as saver:

        def child() -> bool:
            checkpoint, versions = next_checkpoint(saver, None, {"notes": "x" * 1000})
            stored = saver.put(_config("child"), checkpoint, {"source": "loop"}, versions)
            found = saver.get_tuple(stored)
            return found is not None and found.checkpoint["channel_values"]["notes"] == "x" * 1000

        with held_by_another_thread(saver._codec.values._lock):
            yield child


@contextmanager
def _lane_lock(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Callable[[], Any]]:
    """A call in another thread on the connection the lane keeps: the child's calls and
    its ``close()`` (which returns that connection to the pool) complete."""
    with _sqlite_saver(tmp_path / "db.sqlite") as saver:
        write(saver, "a")
        assert read(saver, "a")  # the lane keeps a connection now

        def child() -> bool:
            found = read(saver, "a")
            saver.close()
            return found

        with held_by_another_thread(saver._runner.sync.lane._held_lock):
            yield child


CASES: dict[str, Case] = {
    "a worker-thread job running (SQLite async)": _hop_job_running,
    "the worker threads' lock (SQLite async)": _hop_lock,
    "the Alembic lock (a migration running)": _alembic_lock,
    "the compiled statements' lock": _compile_lock,
    "a thread lock of an in-memory database": _memory_thread_lock,
    "the in-memory thread locks' guard": _memory_locks_guard,
    "the store's search parameters' lock": _search_params_lock,
    "the per-loop engines' lock (SQLite)": _per_loop_lock("sqlite-file"),
    "the per-loop engines' lock (PostgreSQL)": _per_loop_lock("postgres"),
    "the store's rounds' lock": _rounds_lock,
    "the saver's value cache's lock": _value_cache_lock,
    "the lane's lock of its kept connection": _lane_lock,
}


@pytest.mark.parametrize("case", CASES)
def test_a_fork_while_another_thread_holds_a_lock(
    case: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    with CASES[case](tmp_path, request) as child:
        assert in_child(child) is True


# -- the store's TTL sweeper ------------------------------------------------------------------


def test_a_forked_child_can_start_the_ttl_sweeper_again(tmp_path: Path) -> None:
    """The sweeper thread is the parent's (it keeps sweeping the database); the child
    has none, and starts and stops its own."""
    url = f"sqlite:///{tmp_path / 'store.sqlite'}"
    with SQLAlchemyStore.from_conn_string(url, ttl={"default_ttl": 1}) as store:
        store.setup()
        store.start_ttl_sweeper(sweep_interval_minutes=60)

        def child() -> list[bool]:
            inherited = store._sweeper
            seen = [inherited is not None and not inherited.is_alive()]
            store.start_ttl_sweeper(sweep_interval_minutes=60)
            seen.append(store._sweeper is not None and store._sweeper.is_alive())
            seen.append(store.stop_ttl_sweeper(timeout=CHILD_TIMEOUT))
            store.close()
            return seen

        assert in_child(child) == [True, True, True]
        assert store._sweeper is not None and store._sweeper.is_alive()  # the parent's
