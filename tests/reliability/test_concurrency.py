"""Many workers through one saver, on every backend.

Sync: 16 OS threads (``concurrent.futures``) call the sync methods. Async: 16 asyncio
tasks (``asyncio.gather``) call the async methods. Each worker owns its thread_id; the
saver is shared. Also: sync methods called from inside a running event loop return, and
a saver is built and used with no event loop at all.
"""

from __future__ import annotations

import asyncio
import faulthandler
import operator
import threading
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Annotated, Any

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import Checkpoint, empty_checkpoint
from langgraph.checkpoint.memory import InMemorySaver
from typing_extensions import TypedDict

from langgraph.checkpoint.sqlalchemy import SQLAlchemySaver

from ..graphs import chain
from ..provision import new_saver_args

WORKERS = 16
CHECKPOINTS = 20
GRAPH_RUNS = 3


# -- helpers -----------------------------------------------------------------------------


def cfg(thread_id: str, checkpoint_id: str | None = None) -> RunnableConfig:
    c: dict[str, Any] = {"thread_id": thread_id, "checkpoint_ns": ""}
    if checkpoint_id is not None:
        c["checkpoint_id"] = checkpoint_id
    return {"configurable": c}


def values_of(worker: int, i: int) -> dict[str, Any]:
    return {"count": i, "worker": worker, "payload": f"w{worker}-c{i}-" + "x" * (i * 50)}


def make_checkpoint(
    saver: SQLAlchemySaver, previous: Checkpoint | None, worker: int, i: int
) -> tuple[Checkpoint, dict[str, Any]]:
    cp = empty_checkpoint()
    values = values_of(worker, i)
    old = previous["channel_versions"] if previous else {}
    # "worker" never changes after the first checkpoint: its blob is stored once and
    # shared by every later checkpoint of the thread.
    new_versions = {
        ch: saver.get_next_version(old.get(ch), None)
        for ch in values
        if ch not in old or ch != "worker"
    }
    cp["channel_values"] = values
    cp["channel_versions"] = {**old, **new_versions}
    return cp, new_versions


def writes_of(worker: int, i: int) -> list[tuple[str, Any]]:
    return [("out", f"w{worker}-c{i}-write"), ("log", {"worker": worker, "i": i})]


class Ledger:
    """What each worker stored: ``thread_id -> [(config, parent_config, i)]``."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.by_thread: dict[str, list[tuple[RunnableConfig, RunnableConfig | None, int]]] = {}

    def add(
        self, thread: str, config: RunnableConfig, parent: RunnableConfig | None, i: int
    ) -> None:
        with self.lock:
            self.by_thread.setdefault(thread, []).append((config, parent, i))


def thread_name(run: str, worker: int) -> str:
    return f"{run}-worker-{worker:02d}"


def sync_worker(saver: SQLAlchemySaver, run: str, worker: int, ledger: Ledger) -> None:
    thread = thread_name(run, worker)
    parent: RunnableConfig | None = None
    previous: Checkpoint | None = None
    for i in range(CHECKPOINTS):
        cp, new_versions = make_checkpoint(saver, previous, worker, i)
        config = saver.put(
            parent or cfg(thread), cp, {"worker": worker, "i": i, "step": i}, new_versions
        )
        saver.put_writes(config, writes_of(worker, i), f"task-{worker}-{i}")
        # Read back at once, while the others write.
        got = saver.get_tuple(config)
        assert got is not None and got.checkpoint["channel_values"] == values_of(worker, i)
        ledger.add(thread, config, parent, i)
        parent, previous = config, cp


async def async_worker(saver: SQLAlchemySaver, run: str, worker: int, ledger: Ledger) -> None:
    thread = thread_name(run, worker)
    parent: RunnableConfig | None = None
    previous: Checkpoint | None = None
    for i in range(CHECKPOINTS):
        cp, new_versions = make_checkpoint(saver, previous, worker, i)
        config = await saver.aput(
            parent or cfg(thread), cp, {"worker": worker, "i": i, "step": i}, new_versions
        )
        await saver.aput_writes(config, writes_of(worker, i), f"task-{worker}-{i}")
        got = await saver.aget_tuple(config)
        assert got is not None and got.checkpoint["channel_values"] == values_of(worker, i)
        ledger.add(thread, config, parent, i)
        parent, previous = config, cp


def verify_tuple(
    got: Any, config: RunnableConfig, parent: RunnableConfig | None, worker: int, i: int
) -> None:
    assert got is not None
    assert got.config == config
    assert got.parent_config == parent
    assert got.checkpoint["channel_values"] == values_of(worker, i)
    assert got.metadata == {"worker": worker, "i": i, "step": i}
    task = f"task-{worker}-{i}"
    assert got.pending_writes == [(task, ch, v) for ch, v in writes_of(worker, i)]


# -- 16 workers, one saver ---------------------------------------------------------------


async def test_sixteen_workers_share_one_saver(saver: SQLAlchemySaver, mode: str) -> None:
    run = uuid.uuid4().hex[:6]
    ledger = Ledger()
    if mode == "sync":
        loop = asyncio.get_running_loop()
        with ThreadPoolExecutor(max_workers=WORKERS) as pool:
            futures = [
                loop.run_in_executor(pool, sync_worker, saver, run, w, ledger)
                for w in range(WORKERS)
            ]
            await asyncio.gather(*futures)
    else:
        await asyncio.gather(*(async_worker(saver, run, w, ledger) for w in range(WORKERS)))

    assert len(ledger.by_thread) == WORKERS
    everything = [t async for t in saver.alist(None)]
    assert len(everything) == WORKERS * CHECKPOINTS
    for worker in range(WORKERS):
        thread = thread_name(run, worker)
        entries = ledger.by_thread[thread]
        assert [i for _, _, i in entries] == list(range(CHECKPOINTS))
        listed = list(saver.list(cfg(thread)))
        assert len(listed) == CHECKPOINTS
        # Newest first, each with its own values, parent and writes.
        for got, (config, parent, i) in zip(listed, reversed(entries), strict=True):
            verify_tuple(got, config, parent, worker, i)
        for config, parent, i in entries:
            verify_tuple(saver.get_tuple(config), config, parent, worker, i)
            verify_tuple(await saver.aget_tuple(config), config, parent, worker, i)
        latest = saver.get_tuple(cfg(thread))
        verify_tuple(latest, *entries[-1][:2], worker, CHECKPOINTS - 1)
        by_filter = [t async for t in saver.alist(None, filter={"worker": worker})]
        assert len(by_filter) == CHECKPOINTS
        assert {t.config["configurable"]["thread_id"] for t in by_filter} == {thread}


# -- a real graph, 16 threads at once ----------------------------------------------------


class CounterState(TypedDict):
    count: Annotated[int, operator.add]
    trail: Annotated[list[str], operator.add]


def build_graph(checkpointer: Any) -> Any:
    def bump(state: CounterState) -> dict[str, Any]:
        return {"count": 1, "trail": ["bump"]}

    def double_check(state: CounterState) -> dict[str, Any]:
        return {"trail": [f"seen {state['count']}"]}

    return chain(CounterState, bump, double_check, checkpointer=checkpointer)


def reference_history_length() -> int:
    graph = build_graph(InMemorySaver())
    config = cfg("reference")
    for _ in range(GRAPH_RUNS):
        graph.invoke({"count": 0, "trail": []}, config)
    return len(list(graph.get_state_history(config)))


async def test_graph_on_sixteen_threads_through_one_saver(
    saver: SQLAlchemySaver, mode: str
) -> None:
    graph = build_graph(saver)
    expected_history = reference_history_length()
    threads = [f"graph-{uuid.uuid4().hex[:6]}-{n:02d}" for n in range(WORKERS)]

    def run_sync(thread: str) -> Any:
        out = None
        for _ in range(GRAPH_RUNS):
            out = graph.invoke({"count": 0, "trail": []}, cfg(thread))
        return out

    async def run_async(thread: str) -> Any:
        out = None
        for _ in range(GRAPH_RUNS):
            out = await graph.ainvoke({"count": 0, "trail": []}, cfg(thread))
        return out

    if mode == "sync":
        loop = asyncio.get_running_loop()
        with ThreadPoolExecutor(max_workers=WORKERS) as pool:
            results = await asyncio.gather(
                *(loop.run_in_executor(pool, run_sync, t) for t in threads)
            )
    else:
        results = await asyncio.gather(*(run_async(t) for t in threads))

    trail = [x for n in range(1, GRAPH_RUNS + 1) for x in ("bump", f"seen {n}")]
    for thread, result in zip(threads, results, strict=True):
        assert result == {"count": GRAPH_RUNS, "trail": trail}, thread
        state = graph.get_state(cfg(thread))
        assert state.values == {"count": GRAPH_RUNS, "trail": trail}
        astate = await graph.aget_state(cfg(thread))
        assert astate.values == state.values
        history = list(graph.get_state_history(cfg(thread)))
        assert len(history) == expected_history, thread
        assert {h.config["configurable"]["thread_id"] for h in history} == {thread}


# -- sync methods inside a running loop; no loop at all ----------------------------------


def run_with_watchdog(fn: Callable[[], Any], seconds: float = 120.0) -> Any:
    """Run ``fn`` on this thread; abort the whole process (with tracebacks) if it hangs."""
    faulthandler.dump_traceback_later(seconds, exit=True)
    try:
        return fn()
    finally:
        faulthandler.cancel_dump_traceback_later()


async def test_sync_methods_return_promptly_inside_a_running_loop(saver: SQLAlchemySaver) -> None:
    # The async engine is in use by this very loop first.
    first = await saver.aput(cfg("loop"), empty_checkpoint(), {"step": 0}, {})
    assert await saver.aget_tuple(first) is not None
    asyncio.get_running_loop()  # we are inside the loop

    second = run_with_watchdog(lambda: saver.put(first, empty_checkpoint(), {"step": 1}, {}))
    got = run_with_watchdog(lambda: saver.get_tuple(cfg("loop")))
    listed = run_with_watchdog(lambda: list(saver.list(cfg("loop"))))
    run_with_watchdog(lambda: saver.put_writes(second, [("x", 1)], "task"))
    assert got is not None and got.config == second
    assert len(listed) == 2

    # And from a loop running in another thread, with a timeout on that thread.
    box: dict[str, Any] = {}

    def other_loop() -> None:
        async def body() -> None:
            box["tuple"] = saver.get_tuple(second)
            box["config"] = saver.put(second, empty_checkpoint(), {"step": 2}, {})

        try:
            asyncio.run(body())
        except BaseException as e:  # reported below
            box["error"] = e

    t = threading.Thread(target=other_loop, daemon=True)
    t.start()
    t.join(timeout=120)
    assert not t.is_alive(), "sync saver methods hung inside a running event loop"
    assert "error" not in box, box.get("error")
    assert box["tuple"] is not None and box["tuple"].config == second
    # The async door still works on the test's own loop afterwards.
    latest = await saver.aget_tuple(cfg("loop"))
    assert latest is not None and latest.config == box["config"]


def test_saver_works_without_any_event_loop(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    with pytest.raises(RuntimeError):
        asyncio.get_running_loop()
    saver = SQLAlchemySaver.from_conn_string(**new_saver_args(backend, request, tmp_path))
    try:
        saver.setup()
        parent: RunnableConfig | None = None
        configs = []
        for i in range(3):
            cp = empty_checkpoint()
            cp["channel_values"] = {"i": i}
            cp["channel_versions"] = {
                "i": saver.get_next_version(None if i == 0 else f"{i:032}.0", None)
            }
            parent = saver.put(parent or cfg("no-loop"), cp, {"i": i}, cp["channel_versions"])
            saver.put_writes(parent, [("w", i)], "task")
            configs.append(parent)
        for i, config in enumerate(configs):
            got = saver.get_tuple(config)
            assert got is not None
            assert got.checkpoint["channel_values"] == {"i": i}
            assert got.pending_writes == [("task", "w", i)]
        assert len(list(saver.list(cfg("no-loop")))) == 3
        graph = build_graph(saver)
        assert graph.invoke({"count": 0, "trail": []}, cfg("g")) == {
            "count": 1,
            "trail": ["bump", "seen 1"],
        }
        saver.delete_thread("no-loop")
        assert saver.get_tuple(cfg("no-loop")) is None
    finally:
        saver.close()
    with pytest.raises(RuntimeError):
        asyncio.get_running_loop()
