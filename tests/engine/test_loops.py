"""Any event loop, any thread.

A saver is built outside any event loop and its async methods are used from successive
``asyncio.run()`` calls (scripts, Celery tasks, notebooks do this), from several threads
each running a loop of its own, and built, used and closed on three different threads.
These tests are plain functions: each runs its own loops. On every backend, with the
engines made by ``from_conn_string`` and with engines given by the user.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypedDict

import pytest
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.graph import END, START, StateGraph
from sqlalchemy import create_engine
from sqlalchemy.ext.asyncio import create_async_engine

from langgraph.checkpoint.sqlalchemy import SQLAlchemySaver
from langgraph.checkpoint.sqlalchemy._engine.engines import resolve_urls
from langgraph.checkpoint.sqlalchemy._engine.runner import _copy_engine

from ..provision import new_saver_args


@pytest.fixture(params=["from_conn_string", "given_engines"])
def make_saver(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[Callable[[], SQLAlchemySaver]]:
    """Call it (on any thread, outside any loop) for a set-up saver on a fresh store."""
    args = new_saver_args(backend, request, tmp_path)
    given = request.param == "given_engines"
    if given and backend == "sqlite-memory":
        pytest.skip("an in-memory database lives in the engines of from_conn_string")
    disposables: list[Any] = []

    def factory() -> SQLAlchemySaver:
        if not given:
            saver = SQLAlchemySaver.from_conn_string(**args)
        else:
            urls = resolve_urls(args["conn_string"])
            engine, async_engine = create_engine(urls.sync), create_async_engine(urls.async_)
            disposables.extend([engine, async_engine])
            saver = SQLAlchemySaver(engine, async_engine, schema=args.get("schema"))
        saver.setup()
        return saver

    yield factory
    for engine in disposables:
        (getattr(engine, "sync_engine", None) or engine).dispose(close=False)


def _config(thread_id: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}


async def _put_get_list(saver: SQLAlchemySaver, thread_id: str, step: int) -> None:
    """One put, then everything stored so far must be there."""
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"step": step}
    checkpoint["channel_versions"] = {"step": saver.get_next_version(None, None)}
    config = _config(thread_id)
    stored = await saver.aput(config, checkpoint, {"step": step}, {})
    got = await saver.aget_tuple(config)
    assert got is not None and got.config == stored
    assert got.checkpoint["channel_values"] == {"step": step}
    steps = [t.metadata["step"] async for t in saver.alist(config)]
    assert sorted(steps) == list(range(step + 1))


def test_async_methods_from_successive_event_loops(make_saver: Any) -> None:
    """MariaDB used to fail the second ``asyncio.run()`` (the pooled asyncmy connection
    belonged to the first loop) and lose that put."""
    saver = make_saver()
    try:
        for step in range(3):
            asyncio.run(_put_get_list(saver, "t-loops", step))
        assert len(list(saver.list(_config("t-loops")))) == 3
    finally:
        saver.close()


def test_threads_each_with_their_own_loop(make_saver: Any) -> None:
    saver = make_saver()
    barrier = threading.Barrier(3)

    def worker(n: int) -> None:
        barrier.wait()

        async def run() -> None:
            for step in range(4):
                await _put_get_list(saver, f"t-thread-{n}", step)

        asyncio.run(run())

    try:
        with ThreadPoolExecutor(3) as pool:
            for future in [pool.submit(worker, n) for n in range(3)]:
                future.result()
        for n in range(3):
            assert len(list(saver.list(_config(f"t-thread-{n}")))) == 4
        # and once more from yet another loop, after those loops are closed
        asyncio.run(_put_get_list(saver, "t-thread-0", 4))
    finally:
        saver.close()


def _on_thread(fn: Callable[[], Any]) -> Any:
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(fn).result()


@pytest.mark.parametrize("closer", ["close", "aclose"])
def test_build_use_close_on_three_threads(make_saver: Any, closer: str) -> None:
    """``from_conn_string(":memory:")`` closed on another thread used to raise
    ``sqlite3.ProgrammingError`` (its keeper connection belonged to the first thread)."""
    saver = _on_thread(make_saver)

    def use() -> None:
        asyncio.run(_put_get_list(saver, "t-threads", 0))
        checkpoint = empty_checkpoint()
        saver.put(_config("t-threads"), checkpoint, {"step": 1}, {})
        assert len(list(saver.list(_config("t-threads")))) == 2

    _on_thread(use)
    if closer == "close":
        _on_thread(saver.close)
    else:
        _on_thread(lambda: asyncio.run(saver.aclose()))


class _State(TypedDict):
    count: int


def test_graph_ainvoke_from_two_event_loops(make_saver: Any) -> None:
    builder = StateGraph(_State)
    builder.add_node("inc", lambda state: {"count": state["count"] + 1})
    builder.add_edge(START, "inc")
    builder.add_edge("inc", END)
    saver = make_saver()
    graph = builder.compile(checkpointer=saver)
    config: Any = {"configurable": {"thread_id": "t-graph"}}

    async def history() -> list[Any]:
        return [s async for s in graph.aget_state_history(config)]

    try:
        assert asyncio.run(graph.ainvoke({"count": 0}, config))["count"] == 1
        assert asyncio.run(graph.ainvoke({"count": 10}, config))["count"] == 11
        # input, after input, after "inc": three checkpoints a run, all stored
        assert len(asyncio.run(history())) == 6
    finally:
        saver.close()


def test_copy_for_another_loop_never_replaces_the_given_engines_pool() -> None:
    """An engine made by ``.execution_options()`` proxies its parent's pool: the copy for
    another loop gets a pool of its own and the same options, and the user's engine keeps
    its pool."""
    parent = create_async_engine("sqlite+aiosqlite:///unused.db")
    given = parent.execution_options(isolation_level="SERIALIZABLE")
    pool = given.sync_engine.pool
    copied = _copy_engine(given)
    assert given.sync_engine.pool is pool and parent.sync_engine.pool is pool
    assert copied.sync_engine.pool is not pool
    assert copied.sync_engine.get_execution_options()["isolation_level"] == "SERIALIZABLE"
