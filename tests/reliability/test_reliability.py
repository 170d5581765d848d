"""Concurrent runs on one thread, the per-thread lock, and lost connections.

Every backend, sync and async: 16 concurrent invokes of a counter graph on ONE thread end
with the counter equal to the number of invokes that reported success, with
``detect_conflicts=True`` (the losers get ``CheckpointConflictError``) or with
``lock_thread`` around each invoke (all succeed). The official savers lose 15 of the 16
updates without a word. Then: the database server drops the saver's connections
(``pg_terminate_backend``, MariaDB ``KILL``) and the next read and write succeed.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypedDict

import pytest
from langgraph.graph import START, StateGraph
from sqlalchemy import create_engine, text

from langgraph.checkpoint.sqlalchemy import (
    CheckpointConflictError,
    SQLAlchemySaver,
    ThreadLockTimeout,
)

from ..doors import Door
from ..provision import MARIADB_ADMIN_URL, fresh_database
from ..waiting import until

RUNS = 16


class Counter(TypedDict):
    count: int
    nudge: int


def counter_graph(saver: Any) -> Any:
    """``bump`` reads the counter, waits a little (so that runs overlap), adds one."""

    def bump(state: Counter) -> dict[str, Any]:
        time.sleep(0.02)
        return {"count": state["count"] + 1}

    builder = StateGraph(Counter)
    builder.add_node("bump", bump)
    builder.add_edge(START, "bump")
    return builder.compile(checkpointer=saver)


def thread(thread_id: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread_id}}


async def run_concurrently(door: Door, invoke_one: Any) -> list[BaseException | None]:
    """Start ``RUNS`` invokes at once: threads for the sync door, tasks for the async."""
    if door.is_async:
        results = await asyncio.gather(
            *(invoke_one(i) for i in range(RUNS)), return_exceptions=True
        )
        return [r if isinstance(r, BaseException) else None for r in results]

    def call(i: int) -> BaseException | None:
        try:
            asyncio.run(invoke_one(i))
        except BaseException as e:
            return e
        return None

    with ThreadPoolExecutor(RUNS) as pool:
        return list(await asyncio.to_thread(lambda: list(pool.map(call, range(RUNS)))))


@pytest.mark.saver_kwargs(detect_conflicts=True)
async def test_concurrent_runs_on_one_thread_fail_loudly_not_silently(door: Door) -> None:
    graph = counter_graph(door.saver)
    config = thread("counter")
    await door.invoke(graph, {"count": 0, "nudge": 0}, config)

    async def invoke_one(i: int) -> None:
        if door.is_async:
            await graph.ainvoke({"nudge": i}, config)
        else:
            graph.invoke({"nudge": i}, config)

    outcomes = await run_concurrently(door, invoke_one)
    failures = [e for e in outcomes if e is not None]
    assert all(isinstance(e, CheckpointConflictError) for e in failures), failures
    succeeded = RUNS - len(failures)
    assert succeeded >= 1
    state = await door.get_state(graph, config)
    assert state.values["count"] == 1 + succeeded
    # the thread is not stuck: the next run goes through
    await door.invoke(graph, {"nudge": 99}, config)
    assert (await door.get_state(graph, config)).values["count"] == 2 + succeeded


async def test_lock_thread_serialises_runs_so_none_is_lost(door: Door) -> None:
    saver = door.saver
    graph = counter_graph(saver)
    config = thread("locked")
    await door.invoke(graph, {"count": 0, "nudge": 0}, config)

    async def invoke_one(i: int) -> None:
        if door.is_async:
            async with saver.alock_thread("locked", timeout=60):
                await graph.ainvoke({"nudge": i}, config)
        else:
            with saver.lock_thread("locked", timeout=60):
                graph.invoke({"nudge": i}, config)

    outcomes = await run_concurrently(door, invoke_one)
    assert outcomes == [None] * RUNS
    assert (await door.get_state(graph, config)).values["count"] == 1 + RUNS


@pytest.mark.saver_kwargs(detect_conflicts=True)
async def test_deliberate_forks_pass_the_conflict_check(door: Door) -> None:
    graph = counter_graph(door.saver)
    config = thread("forks")
    for i in range(3):
        await door.invoke(graph, {"count": 0, "nudge": i} if i == 0 else {"nudge": i}, config)
    history = [s async for s in _history(door, graph, config)]
    older = next(s for s in history if s.values.get("count") == 1 and not s.next)
    # update_state on an older checkpoint (source "update"), then a replay from one
    # (source "fork") and the run that follows it (source "loop", parent = the fork)
    await door.update_state(graph, older.config, {"count": 10})
    replay_from = next(s for s in history if s.next == ("bump",))
    await door.invoke(graph, None, replay_from.config)
    # the default (newest) state continues too
    await door.invoke(graph, {"nudge": 7}, config)


async def _history(door: Door, graph: Any, config: dict[str, Any]) -> Any:
    if door.is_async:
        async for s in graph.aget_state_history(config):
            yield s
    else:
        for s in graph.get_state_history(config):
            yield s


async def test_lock_thread_times_out_while_another_holder_has_it(
    door: Door, saver_factory: Any
) -> None:
    other = saver_factory(shared=True)  # another process in spirit: own engines
    with other.lock_thread("busy"):
        # held all along: the timeout ended the wait, not a release
        with pytest.raises(ThreadLockTimeout, match=r"'busy' stayed locked .* for 0\.3 s"):
            if door.is_async:
                async with door.saver.alock_thread("busy", timeout=0.3):
                    pass
            else:
                with door.saver.lock_thread("busy", timeout=0.3):
                    pass
        # another thread id is not blocked
        with door.saver.lock_thread("free", timeout=1):
            pass
    # released: it can be taken now
    with door.saver.lock_thread("busy", timeout=1):
        pass


# -- lost connections ------------------------------------------------------------------------


def _drop_connections(backend: str, saver: SQLAlchemySaver, tag: str) -> int:
    """Make the server drop every connection of ``saver``: the ones tagged with
    application name ``tag`` on PostgreSQL, the ones whose default database is the
    saver's (``tag`` with the test prefix) on MariaDB. Returns how many were dropped,
    once the server has ended them all (``pg_terminate_backend`` only asks)."""
    if backend == "postgres":
        admin = create_engine(saver.engine.url, isolation_level="AUTOCOMMIT")
        left = text("SELECT count(*) FROM pg_stat_activity WHERE application_name = :tag")
        with admin.connect() as conn:
            dropped = conn.execute(
                text(
                    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                    "WHERE application_name = :tag"
                ),
                {"tag": tag},
            ).scalar_one()
            until(lambda: conn.execute(left, {"tag": tag}).scalar_one() == 0, "the sessions' end")
        admin.dispose()
        return int(dropped)
    admin = create_engine(MARIADB_ADMIN_URL, isolation_level="AUTOCOMMIT")
    query = text("SELECT id FROM information_schema.processlist WHERE db = :db")
    with admin.connect() as conn:

        def listed() -> set[int]:
            return set(conn.execute(query, {"db": saver.engine.url.database}).scalars())

        ids = listed()
        for connection_id in ids:
            conn.execute(text(f"KILL CONNECTION {int(connection_id)}"))
        until(lambda: not ids & listed(), "the sessions' end")
    admin.dispose()
    return len(ids)


@pytest.fixture
def droppable(backend: str, saver_factory: Any) -> Any:
    """``(saver, tag)``: a saver whose connections the server can be told to drop."""
    tag = f"lgsa_kill_{uuid.uuid4().hex[:12]}"
    if backend == "postgres":
        yield saver_factory(pool_size=4, connect_args={"application_name": tag}), tag
        return
    if backend != "mariadb":
        pytest.skip("a server-side connection drop needs a database server")
    with fresh_database("mariadb", name=tag) as url:
        saver = SQLAlchemySaver.from_conn_string(url, pool_size=4)
        saver.setup()
        yield saver, tag


async def test_saver_recovers_after_the_server_drops_its_connections(
    mode: str, droppable: Any
) -> None:
    saver, tag = droppable
    door = Door(saver, mode)
    graph = counter_graph(saver)
    config = thread("survivor")
    try:
        await door.invoke(graph, {"count": 0, "nudge": 0}, config)
        for i in range(3):  # fill the pool
            await door.invoke(graph, {"nudge": i}, config)
        assert _drop_connections(_kind(saver), saver, tag) >= 1

        # the next read succeeds, then writes, and the saver stays usable
        assert (await door.get_state(graph, config)).values["count"] == 4
        await door.invoke(graph, {"nudge": 9}, config)
        assert (await door.get_state(graph, config)).values["count"] == 5
        # again, in the middle of a series of calls
        assert _drop_connections(_kind(saver), saver, tag) >= 1
        await door.invoke(graph, {"nudge": 10}, config)
        listed = await door.list(config)
        assert listed[0].checkpoint["channel_values"]["count"] == 6
    finally:
        if _kind(saver) == "mariadb":
            await saver.aclose()


def _kind(saver: SQLAlchemySaver) -> str:
    return "postgres" if saver.engine.dialect.name == "postgresql" else "mariadb"
