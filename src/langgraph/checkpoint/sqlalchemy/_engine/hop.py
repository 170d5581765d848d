"""Worker threads for the async door where the driver is run in a thread (SQLite).

``asyncio.to_thread`` would do, and did: it costs ~170,000 CPU instructions a call on
this project's machine (a ``ThreadPoolExecutor`` submission, a ``concurrent.futures``
future chained to an asyncio one by ``wrap_future``, callbacks both ways), as much as the
rest of a ``put_writes``. :func:`run` hands the call to a worker through a C-implemented
``queue.SimpleQueue`` and sets the awaiting future with one ``call_soon_threadsafe``:
~63,000 (measured under callgrind, 100 hops of a no-op each way). What is kept of
``to_thread``: the call runs in a copy of the caller's ``contextvars`` context, its
exception (``BaseException`` included) is raised to the awaiting task, a cancelled
awaiter leaves the call to finish in its thread (its result dropped), and calls run in
parallel on up to :data:`MAX_WORKERS` threads (SQLite readers do not wait for each other
or for a writer's ``busy_timeout``).

Workers are process-wide daemon threads, started when every existing one is busy and
kept for the next calls (as the default executor keeps its threads). A process forked
from this one has none of them (``fork()`` copies only the calling thread): its counts,
its queue and its lock start again empty there (:func:`_after_fork_in_child`), so that
its first call starts a worker of its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import os
import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["MAX_WORKERS", "run"]

R = TypeVar("R")

#: Most worker threads (``ThreadPoolExecutor``'s default on a machine of 28+ CPUs).
MAX_WORKERS = 32

_Job = tuple[
    asyncio.AbstractEventLoop,
    "asyncio.Future[Any]",
    contextvars.Context,
    Callable[..., Any],
    tuple[Any, ...],
]

_jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
_lock = threading.Lock()
_idle = 0
_workers = 0


async def run(fn: Callable[..., R], *args: Any) -> R:
    """``fn(*args)`` in a worker thread, awaited (see the module).

    Raises:
        BaseException: What ``fn`` raised.
    """
    global _idle, _workers
    loop = asyncio.get_running_loop()
    future: asyncio.Future[R] = loop.create_future()
    _jobs.put((loop, future, contextvars.copy_context(), fn, args))
    with _lock:
        if _idle:
            _idle -= 1  # an idle worker takes it
        elif _workers < MAX_WORKERS:
            _workers += 1
            threading.Thread(target=_work, name=f"lgsa-hop-{_workers}", daemon=True).start()
        # else: all MAX_WORKERS busy; the next one free takes it
    return await future


def _work() -> None:
    global _idle
    while True:
        loop, future, context, fn, args = _jobs.get()
        try:
            result = context.run(fn, *args)
        except BaseException as e:  # handed to the awaiting task
            _deliver(loop, _set_exception, future, e)
        else:
            _deliver(loop, _set_result, future, result)
        del loop, future, context, fn, args
        with _lock:
            _idle += 1


def _deliver(loop: asyncio.AbstractEventLoop, how: Callable[..., None], *args: Any) -> None:
    # A loop closed meanwhile (RuntimeError): nobody awaits the result any more.
    with contextlib.suppress(RuntimeError):
        loop.call_soon_threadsafe(how, *args)


def _set_result(future: asyncio.Future[Any], result: Any) -> None:
    if not future.done():  # a cancelled awaiter drops the result
        future.set_result(result)


def _set_exception(future: asyncio.Future[Any], error: BaseException) -> None:
    if not future.done():
        future.set_exception(error)


def _after_fork_in_child() -> None:
    """In a child process after ``fork()``: the workers were the parent's threads, which
    do not exist here. Counted as idle, they would take every job the child queues and
    run none (its first async call would wait forever); the jobs still queued are the
    parent's, for event loops that do not run here; the lock may have been held by
    another thread of the parent at the moment of the fork."""
    global _jobs, _lock, _idle, _workers
    _jobs = queue.SimpleQueue()
    _lock = threading.Lock()
    _idle = _workers = 0


if hasattr(os, "register_at_fork"):  # not on Windows
    os.register_at_fork(after_in_child=_after_fork_in_child)
