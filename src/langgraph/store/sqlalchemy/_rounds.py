"""Concurrent async calls of the store gathered into rounds, one queue per event loop.

LangGraph's official stores (``AsyncBatchedBaseStore``) queue every ``aget``, ``aput``,
``asearch``, ``adelete`` and ``alist_namespaces`` and run what has gathered as one batch,
so that thousands of concurrent calls use one connection instead of exhausting the pool.
:class:`Rounds` does the same for :class:`~.store.SQLAlchemyStore`, whose one-operation
``abatch`` calls (what those methods send) are already checked when they join: a bad
operation fails its own caller only, before it is queued.

A round takes up to :data:`ROUND_OPS` waiting calls and runs them as one batch (one
transaction); calls made meanwhile wait for the next round. A round that fails for a
reason that is not the database's reachability is split in halves and each half run
again, until the calls that fail are alone: each caller gets its own result or error.

Nothing outlives the work: a loop's queue and its task exist only while calls wait or
run (the task ends when its queue is empty), so no task is left on an idle loop, on a
loop that ended, or after ``aclose()``; loops of other threads have queues of their own.
"""

from __future__ import annotations

import asyncio
import os
import threading
import weakref
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Generic, TypeVar

__all__ = ["ROUND_OPS", "Rounds"]

#: Most calls one round runs as one batch: what one transaction writes in a few hundred
#: milliseconds on every backend, and well below the bound parameters of one statement.
ROUND_OPS = 1000

P = TypeVar("P")  # a checked call
R = TypeVar("R")  # its result

_Entry = tuple["asyncio.Future[Any]", Any]


class _Queue:
    """The calls of one event loop waiting for a round, and the task running rounds."""

    __slots__ = ("running", "task", "waiting")

    def __init__(self) -> None:
        self.waiting: list[_Entry] = []
        self.running: list[_Entry] = []
        self.task: asyncio.Task[None] | None = None


class Rounds(Generic[P, R]):
    """Runs concurrent calls of each event loop as batches of up to ``size`` calls.

    Args:
        run: Runs checked calls as one batch; returns one result per call, in order.
        final: Errors that would fail any part of a round alike (the database out of
            reach): given to every caller of the round, without splitting it.
        size: Most calls a round.
    """

    def __init__(
        self,
        run: Callable[[Sequence[P]], Awaitable[Sequence[R]]],
        *,
        final: tuple[type[BaseException], ...],
        size: int = ROUND_OPS,
    ) -> None:
        self._run = run
        self._final = final
        self._size = size
        self._queues: dict[asyncio.AbstractEventLoop, _Queue] = {}
        self._lock = threading.Lock()  # the dict, shared by the loops of every thread
        _ROUNDS.add(self)

    async def submit(self, call: P) -> R:
        """Queue ``call`` on the running loop; its result once its round has run.

        Raises:
            Exception: What running the call alone raises.
        """
        loop = asyncio.get_running_loop()
        future: asyncio.Future[R] = loop.create_future()
        queue = self._queue(loop)
        queue.waiting.append((future, call))
        if queue.task is None:
            queue.task = loop.create_task(self._drain(loop, queue), name="lgsa-store-rounds")
        return await future

    async def finish(self) -> None:
        """Wait until the running loop's queued calls have run (``aclose``)."""
        queue = self._queues.get(asyncio.get_running_loop())
        task = queue.task if queue is not None else None
        if task is not None and task is not asyncio.current_task():
            await asyncio.wait([task])

    def _queue(self, loop: asyncio.AbstractEventLoop) -> _Queue:
        found = self._queues.get(loop)
        if found is not None:
            return found
        with self._lock:
            for gone in [known for known in self._queues if known.is_closed()]:
                del self._queues[gone]  # a loop closed with calls queued: they cannot run
            return self._queues.setdefault(loop, _Queue())

    async def _drain(self, loop: asyncio.AbstractEventLoop, queue: _Queue) -> None:
        try:
            while queue.waiting:
                taken = queue.waiting[: self._size]
                del queue.waiting[: self._size]
                queue.running = [e for e in taken if not e[0].done()]  # not cancelled
                if queue.running:
                    await self._settle(queue.running)
                queue.running = []
        finally:
            # Cancelled (the loop is ending): no call is left waiting on a round that
            # will not run.
            for future, _ in queue.running + queue.waiting:
                future.cancel()
            with self._lock:
                if self._queues.get(loop) is queue:
                    del self._queues[loop]

    async def _settle(self, entries: list[_Entry]) -> None:
        """Run ``entries`` as one batch and give each caller its result; on an error
        that is not :attr:`final`, run each half again (the callers that fail end up
        alone)."""
        try:
            results = await self._run([call for _, call in entries])
        except self._final as e:
            _fail(entries, e)
            return
        except Exception as e:
            if len(entries) == 1:
                _fail(entries, e)
                return
            half = len(entries) // 2
            await self._settle(entries[:half])
            await self._settle(entries[half:])
            return
        for (future, _), result in zip(entries, results, strict=True):
            if not future.done():
                future.set_result(result)


def _fail(entries: list[_Entry], error: BaseException) -> None:
    for future, _ in entries:
        if not future.done():
            future.set_exception(error)


#: Every :class:`Rounds` of the process, for :func:`_after_fork_in_child`.
_ROUNDS: weakref.WeakSet[Rounds[Any, Any]] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    """In a child process after ``fork()``: another thread of the parent may have held a
    :class:`Rounds`' lock at the moment of the fork, and nothing would release it here.
    The queues of the parent's loops stay (none of those loops runs in the child; one
    found closed is dropped by the next call)."""
    for rounds in list(_ROUNDS):
        rounds._lock = threading.Lock()


if hasattr(os, "register_at_fork"):  # not on Windows
    os.register_at_fork(after_in_child=_after_fork_in_child)
