"""The timed bodies: each takes an open saver (sync or async twin) and returns one figure.

Every body warms up first (untimed: connections, statement caches, prepared statements),
then times its loop with ``time.perf_counter``, and checks what it read or wrote (untimed)
so that a broken saver cannot look fast.
"""

from __future__ import annotations

import asyncio
import threading
import time
import tracemalloc
import uuid
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager, AbstractContextManager
from typing import Any, TypedDict

from .data import History, write_batch

WARMUP = 10


def thread_config(thread_id: str, checkpoint_id: str | None = None) -> dict[str, Any]:
    """The config of a thread (its latest checkpoint), or of one checkpoint of it."""
    c: dict[str, Any] = {"thread_id": thread_id, "checkpoint_ns": ""}
    if checkpoint_id:
        c["checkpoint_id"] = checkpoint_id
    return {"configurable": c}


# -- puts -------------------------------------------------------------------------------------


def put(saver: Any, n: int, big: bool) -> float:
    """Checkpoints a second: ``n`` puts on one thread."""
    warm = History(saver, "warmup", big=big)
    for _ in range(WARMUP):
        warm.put()
    h = History(saver, "bench", big=big)
    t = time.perf_counter()
    for _ in range(n):
        h.put()
    rate = n / (time.perf_counter() - t)
    tup = saver.get_tuple(thread_config("bench"))
    assert tup.config["configurable"]["checkpoint_id"] == h.ids[-1]
    return rate


async def aput(saver: Any, n: int, big: bool) -> float:
    warm = History(saver, "warmup", big=big)
    for _ in range(WARMUP):
        await warm.aput()
    h = History(saver, "bench", big=big)
    t = time.perf_counter()
    for _ in range(n):
        await h.aput()
    rate = n / (time.perf_counter() - t)
    tup = await saver.aget_tuple(thread_config("bench"))
    assert tup.config["configurable"]["checkpoint_id"] == h.ids[-1]
    return rate


def put_writes(saver: Any, n: int) -> float:
    """Calls a second: ``n`` put_writes of 2 writes, each call a new task of one checkpoint."""
    h = History(saver, "bench")
    h.put()
    tasks = [str(uuid.uuid4()) for _ in range(n + WARMUP)]
    for i in range(WARMUP):
        saver.put_writes(h.config, write_batch(i), tasks[n + i])
    t = time.perf_counter()
    for i in range(n):
        saver.put_writes(h.config, write_batch(i), tasks[i])
    rate = n / (time.perf_counter() - t)
    assert len(saver.get_tuple(h.config).pending_writes) == 2 * (n + WARMUP)
    return rate


async def aput_writes(saver: Any, n: int) -> float:
    h = History(saver, "bench")
    await h.aput()
    tasks = [str(uuid.uuid4()) for _ in range(n + WARMUP)]
    for i in range(WARMUP):
        await saver.aput_writes(h.config, write_batch(i), tasks[n + i])
    t = time.perf_counter()
    for i in range(n):
        await saver.aput_writes(h.config, write_batch(i), tasks[i])
    rate = n / (time.perf_counter() - t)
    assert len((await saver.aget_tuple(h.config)).pending_writes) == 2 * (n + WARMUP)
    return rate


# -- concurrency ------------------------------------------------------------------------------


def workers(saver: Any, n_workers: int, n: int) -> float:
    """Checkpoints a second of ``n_workers`` OS threads, each putting ``n`` checkpoints on
    its own LangGraph thread, started together."""
    barrier = threading.Barrier(n_workers + 1)
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            warm = History(saver, f"warmup-{i}")
            for _ in range(2):
                warm.put()
            h = History(saver, f"worker-{i}")
            barrier.wait()
            for _ in range(n):
                h.put()
        except BaseException as e:  # reported below, after the join
            errors.append(e)
            barrier.abort()

    threads = [threading.Thread(target=work, args=(i,)) for i in range(n_workers)]
    for th in threads:
        th.start()
    barrier.wait()
    t = time.perf_counter()
    for th in threads:
        th.join()
    elapsed = time.perf_counter() - t
    if errors:
        raise errors[0]
    assert len(list(saver.list(thread_config(f"worker-{n_workers - 1}")))) == n
    return n_workers * n / elapsed


async def aworkers(saver: Any, n_workers: int, n: int) -> float:
    """The async twin: ``n_workers`` tasks in one event loop."""

    async def warm(i: int) -> None:
        h = History(saver, f"warmup-{i}")
        for _ in range(2):
            await h.aput()

    async def work(i: int) -> None:
        h = History(saver, f"worker-{i}")
        for _ in range(n):
            await h.aput()

    await asyncio.gather(*(warm(i) for i in range(n_workers)))
    t = time.perf_counter()
    await asyncio.gather(*(work(i) for i in range(n_workers)))
    elapsed = time.perf_counter() - t
    assert len([x async for x in saver.alist(thread_config(f"worker-{n_workers - 1}"))]) == n
    return n_workers * n / elapsed


# -- graph --------------------------------------------------------------------------------------


class _State(TypedDict, total=False):
    count: int
    text: str


def _graph(saver: Any) -> Any:
    from langgraph.graph import END, START, StateGraph

    def count(state: _State) -> dict[str, Any]:
        return {"count": state.get("count", 0) + 1}

    def describe(state: _State) -> dict[str, Any]:
        return {"text": f"count is {state['count']}"}

    builder = StateGraph(_State)
    builder.add_node("count", count)
    builder.add_node("describe", describe)
    builder.add_edge(START, "count")
    builder.add_edge("count", "describe")
    builder.add_edge("describe", END)
    return builder.compile(checkpointer=saver)


def graph(saver: Any, n: int) -> float:
    """Invokes a second of a 2-node StateGraph, ``n`` invokes on one thread (``saver``
    None: no checkpointer)."""
    g = _graph(saver)
    for i in range(WARMUP // 2):
        g.invoke({"text": "go"}, thread_config(f"warmup-{i}"))
    t = time.perf_counter()
    for _ in range(n):
        out = g.invoke({"text": "go"}, thread_config("graph"))
    rate = n / (time.perf_counter() - t)
    assert out["count"] == (n if saver is not None else 1), out
    return rate


async def agraph(saver: Any, n: int) -> float:
    g = _graph(saver)
    for i in range(WARMUP // 2):
        await g.ainvoke({"text": "go"}, thread_config(f"warmup-{i}"))
    t = time.perf_counter()
    for _ in range(n):
        out = await g.ainvoke({"text": "go"}, thread_config("graph"))
    rate = n / (time.perf_counter() - t)
    assert out["count"] == (n if saver is not None else 1), out
    return rate


SHORT_LIVED_INVOKES = 3


def short_lived(open_saver: Callable[[], AbstractContextManager[Any]], n: int) -> float:
    """Cycles a second of a short-lived saver on an existing database: open it (with its
    setup), run 3 invokes of the 2-node graph on a new thread, close; ``n`` cycles."""
    t = time.perf_counter()
    for i in range(n):
        with open_saver() as saver:
            g = _graph(saver)
            for _ in range(SHORT_LIVED_INVOKES):
                out = g.invoke({"text": "go"}, thread_config(f"short-{i}"))
    rate = n / (time.perf_counter() - t)
    assert out["count"] == SHORT_LIVED_INVOKES, out
    return rate


async def ashort_lived(open_saver: Callable[[], AbstractAsyncContextManager[Any]], n: int) -> float:
    t = time.perf_counter()
    for i in range(n):
        async with open_saver() as saver:
            g = _graph(saver)
            for _ in range(SHORT_LIVED_INVOKES):
                out = await g.ainvoke({"text": "go"}, thread_config(f"short-{i}"))
    rate = n / (time.perf_counter() - t)
    assert out["count"] == SHORT_LIVED_INVOKES, out
    return rate


# -- reads ------------------------------------------------------------------------------------


def get_tuple(saver: Any, configs: list[dict[str, Any]]) -> float:
    """Milliseconds a call: ``get_tuple`` of each config in turn."""
    for c in configs[:WARMUP]:
        assert saver.get_tuple(c) is not None
    t = time.perf_counter()
    for c in configs:
        saver.get_tuple(c)
    return (time.perf_counter() - t) * 1000 / len(configs)


async def aget_tuple(saver: Any, configs: list[dict[str, Any]]) -> float:
    for c in configs[:WARMUP]:
        assert await saver.aget_tuple(c) is not None
    t = time.perf_counter()
    for c in configs:
        await saver.aget_tuple(c)
    return (time.perf_counter() - t) * 1000 / len(configs)


def list_(saver: Any, calls: int, expect: int, config: Any, **kwargs: Any) -> float:
    """Milliseconds a call: ``list(config, **kwargs)`` consumed entirely, ``calls`` times."""
    for _ in range(min(2, calls)):
        assert sum(1 for _ in saver.list(config, **kwargs)) == expect
    t = time.perf_counter()
    for _ in range(calls):
        for _tup in saver.list(config, **kwargs):
            pass
    return (time.perf_counter() - t) * 1000 / calls


async def alist(saver: Any, calls: int, expect: int, config: Any, **kwargs: Any) -> float:
    for _ in range(min(2, calls)):
        assert len([x async for x in saver.alist(config, **kwargs)]) == expect
    t = time.perf_counter()
    for _ in range(calls):
        async for _tup in saver.alist(config, **kwargs):
            pass
    return (time.perf_counter() - t) * 1000 / calls


def delete_thread(saver: Any, thread_id: str) -> float:
    """Milliseconds of one ``delete_thread`` (of a thread the harness copied)."""
    assert saver.get_tuple(thread_config(thread_id)) is not None
    saver.delete_thread("no-such-thread")
    t = time.perf_counter()
    saver.delete_thread(thread_id)
    elapsed = (time.perf_counter() - t) * 1000
    assert saver.get_tuple(thread_config(thread_id)) is None
    return elapsed


async def adelete_thread(saver: Any, thread_id: str) -> float:
    assert await saver.aget_tuple(thread_config(thread_id)) is not None
    await saver.adelete_thread("no-such-thread")
    t = time.perf_counter()
    await saver.adelete_thread(thread_id)
    elapsed = (time.perf_counter() - t) * 1000
    assert await saver.aget_tuple(thread_config(thread_id)) is None
    return elapsed


# -- memory -------------------------------------------------------------------------------------


def list_memory(saver: Any, expect: int) -> float:
    """Peak growth of the Python heap (tracemalloc, MB) while iterating ``list(None)``."""
    assert sum(1 for _ in saver.list(None, limit=1)) == 1
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        n = 0
        for _tup in saver.list(None):
            n += 1
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert n == expect, n
    return (peak - base) / 1e6
