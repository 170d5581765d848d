"""32 workers running a real graph through one saver whose pool is smaller than that.

Each worker owns a thread_id and, for a bounded time, invokes a two-node graph and reads
(``get_state``, ``get_state_history`` with a limit, now and then ``list(None, limit=5)``
across all threads). Sync workers are OS threads; async workers are asyncio tasks. The
saver's pool (8 + 4 overflow) is contended. At the end: no call failed, every thread
holds exactly the checkpoints its invokes wrote and a state counting them, and the pool
has every connection back.
"""

from __future__ import annotations

import asyncio
import operator
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Annotated, Any

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.graph.state import CompiledStateGraph
from sqlalchemy import event, func, select
from typing_extensions import TypedDict

from langgraph.checkpoint.sqlalchemy import SQLAlchemySaver
from langgraph.checkpoint.sqlalchemy.schema import checkpoints

from ..graphs import chain, thread
from ..provision import BACKENDS, new_saver_args

WORKERS = 32
#: How long the workers run, in seconds (each finishes the invoke it is in)...
DURATION = 6.0
#: ... but each does at least this many invokes (on a starved CPU, 32 asyncio tasks on one
#: event loop may get through only one or two in DURATION).
MIN_INVOKES = 2
#: The pool of each engine: smaller than the number of workers.
POOL = {"pool_size": 8, "max_overflow": 4, "pool_timeout": 30}
SERVERS = [b for b in ("postgres", "mariadb") if b in BACKENDS]


class State(TypedDict):
    count: int
    log: Annotated[list[str], operator.add]


def build_graph(saver: SQLAlchemySaver) -> CompiledStateGraph[Any]:
    def first(state: State) -> dict[str, Any]:
        return {"count": state.get("count", 0) + 1, "log": ["first"]}

    def second(state: State) -> dict[str, Any]:
        return {"log": ["second"]}

    return chain(State, first, second, checkpointer=saver)  # type: ignore[no-any-return]


def cfg(thread_id: str) -> RunnableConfig:
    return thread(thread_id)  # type: ignore[return-value]


def sync_worker(graph: Any, saver: SQLAlchemySaver, worker: int, deadline: float) -> int:
    """Invoke and read until ``deadline``; return the number of invokes."""
    config = cfg(f"load-{worker}")
    done = 0
    while done < MIN_INVOKES or time.monotonic() < deadline:
        out = graph.invoke({"log": []}, config)
        done += 1
        assert out["count"] == done
        assert graph.get_state(config).values["count"] == done
        if done % 3 == worker % 3:
            history = list(graph.get_state_history(config, limit=4))
            assert 1 <= len(history) <= 4
            assert history[0].values["count"] == done
        if done % 10 == worker % 10:
            assert len(list(saver.list(None, limit=5))) == 5
    return done


async def async_worker(graph: Any, saver: SQLAlchemySaver, worker: int, deadline: float) -> int:
    config = cfg(f"load-{worker}")
    done = 0
    while done < MIN_INVOKES or time.monotonic() < deadline:
        out = await graph.ainvoke({"log": []}, config)
        done += 1
        assert out["count"] == done
        assert (await graph.aget_state(config)).values["count"] == done
        if done % 3 == worker % 3:
            history = [s async for s in graph.aget_state_history(config, limit=4)]
            assert 1 <= len(history) <= 4
            assert history[0].values["count"] == done
        if done % 10 == worker % 10:
            assert len([t async for t in saver.alist(None, limit=5)]) == 5
    return done


class PoolPeak:
    """Most connections an engine's pool had checked out at once."""

    def __init__(self, engine: Any) -> None:
        self.now = self.peak = 0
        self.lock = threading.Lock()
        event.listen(engine, "checkout", self.checkout)
        event.listen(engine, "checkin", self.checkin)

    def checkout(self, *_: Any) -> None:
        with self.lock:
            self.now += 1
            self.peak = max(self.peak, self.now)

    def checkin(self, *_: Any) -> None:
        with self.lock:
            self.now -= 1


def checkpoints_per_invoke(graph: Any, saver: SQLAlchemySaver) -> int:
    """What one invoke writes, measured on a thread of its own."""
    graph.invoke({"log": []}, cfg("probe"))
    return len(list(saver.list(cfg("probe"))))


def check_store(graph: Any, saver: SQLAlchemySaver, invokes: list[int], per_invoke: int) -> None:
    """Nothing lost, nothing doubled; the pools are idle again and the saver answers."""
    c = checkpoints
    engine = saver.engine
    if saver.schema:
        engine = engine.execution_options(schema_translate_map={None: saver.schema})
    with engine.connect() as conn:
        stored = dict(
            conn.execute(select(c.c.thread_id, func.count()).group_by(c.c.thread_id)).all()
        )
    expected = {f"load-{w}": n * per_invoke for w, n in enumerate(invokes)}
    assert {t: n for t, n in stored.items() if t != "probe"} == expected
    for w, n in enumerate(invokes):
        state = graph.get_state(cfg(f"load-{w}")).values
        assert state["count"] == n
        assert state["log"] == ["first", "second"] * n
    # The sync short door keeps one connection between calls where it may
    # (tests/engine/test_held_connection.py); nothing else stays checked out.
    kept = 0 if saver._runner.sync.lane._held is None else 1
    assert saver.engine.pool.checkedout() == kept  # type: ignore[attr-defined]
    assert saver.async_engine.sync_engine.pool.checkedout() == 0  # type: ignore[attr-defined]
    assert saver.get_tuple(cfg("load-0")) is not None  # a pool left exhausted: TimeoutError


@pytest.mark.parametrize("backend", SERVERS)
def test_thirty_two_threads_on_a_small_pool(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    saver = SQLAlchemySaver.from_conn_string(**new_saver_args(backend, request, tmp_path), **POOL)
    try:
        saver.setup()
        graph = build_graph(saver)
        per_invoke = checkpoints_per_invoke(graph, saver)
        peak = PoolPeak(saver.engine.pool)
        deadline = time.monotonic() + DURATION
        with ThreadPoolExecutor(WORKERS) as pool:
            futures = [pool.submit(sync_worker, graph, saver, w, deadline) for w in range(WORKERS)]
            invokes = [f.result() for f in futures]
        assert peak.peak >= POOL["pool_size"], "the pool was never contended"
        check_store(graph, saver, invokes, per_invoke)
    finally:
        saver.close()


@pytest.mark.parametrize("backend", SERVERS)
async def test_thirty_two_tasks_on_a_small_pool(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    saver = SQLAlchemySaver.from_conn_string(**new_saver_args(backend, request, tmp_path), **POOL)
    try:
        await saver.asetup()
        graph = build_graph(saver)
        per_invoke = await asyncio.to_thread(checkpoints_per_invoke, graph, saver)
        peak = PoolPeak(saver.async_engine.sync_engine.pool)
        deadline = time.monotonic() + DURATION
        invokes = list(
            await asyncio.gather(*(async_worker(graph, saver, w, deadline) for w in range(WORKERS)))
        )
        assert peak.peak >= POOL["pool_size"], "the pool was never contended"
        # The async pool is idle once every task returned.
        assert saver.async_engine.sync_engine.pool.checkedout() == 0  # type: ignore[attr-defined]
        await asyncio.to_thread(check_store, graph, saver, invokes, per_invoke)
    finally:
        await saver.aclose()
