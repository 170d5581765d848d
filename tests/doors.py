"""One awaitable API over the sync or the async methods of a saver or a graph.

Test bodies are written once against :class:`Door`; the ``mode`` fixture decides whether
each call goes to ``saver.put`` or ``await saver.aput`` (and ``graph.invoke`` or
``await graph.ainvoke``). Sync calls are made directly on the event loop's thread, which
also proves that sync methods called from a running loop do not hang.

Neither :class:`Door` nor :class:`SyncMethodsAdapter` lists the saver API by hand: both
are derived from the method pairs the saver has (:func:`twins`: ``name`` with an
``async def aname``), so a new pair is reachable through them without a change here.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import Awaitable, Callable
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointTuple

from langgraph.checkpoint.sqlalchemy import SQLAlchemySaver


@functools.cache
def twins(cls: type) -> list[str]:
    """The public method names ``name`` of ``cls`` whose async twin ``aname`` is a
    coroutine function (``list``/``alist``, an async generator, is not one)."""
    return sorted(
        name
        for name in dir(cls)
        if not name.startswith("_")
        and callable(getattr(cls, name))
        and inspect.iscoroutinefunction(getattr(cls, "a" + name, None))
    )


class Door:
    """The saver (and graphs compiled with it) through one mode: "sync" or "async".

    ``door.name(...)`` is ``saver.name(...)`` or ``await saver.aname(...)`` for every
    pair in :func:`twins` of the saver's class (``put``, ``get_tuple``, ``prune``, ...),
    awaitable either way. ``list`` and the graph methods are written out: their async
    forms are async generators or take the graph.
    """

    def __init__(self, saver: Any, mode: str) -> None:
        assert mode in ("sync", "async")
        self.saver = saver
        self.mode = mode

    @property
    def is_async(self) -> bool:
        return self.mode == "async"

    async def call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        """Call ``saver.name`` (sync) or ``await saver.aname`` (async)."""
        if self.is_async:
            return await getattr(self.saver, "a" + name)(*args, **kwargs)
        return getattr(self.saver, name)(*args, **kwargs)

    def __getattr__(self, name: str) -> Callable[..., Awaitable[Any]]:
        """``name`` of the saver's method pairs, as an awaitable through this door.

        Raises:
            AttributeError: the saver has no ``name``/``aname`` pair.
        """
        saver = self.__dict__.get("saver")
        if saver is None or name not in twins(type(saver)):
            raise AttributeError(name)

        async def method(*args: Any, **kwargs: Any) -> Any:
            return await self.call(name, *args, **kwargs)

        method.__name__ = name
        return method

    async def list(self, config: RunnableConfig | None, **kwargs: Any) -> list[CheckpointTuple]:
        if self.is_async:
            return [t async for t in self.saver.alist(config, **kwargs)]
        return list(self.saver.list(config, **kwargs))

    # graphs ----------------------------------------------------------------------

    async def _graph(self, graph: Any, name: str, *args: Any, **kw: Any) -> Any:
        if self.is_async:
            return await getattr(graph, "a" + name)(*args, **kw)
        return getattr(graph, name)(*args, **kw)

    async def invoke(self, graph: Any, inputs: Any, config: RunnableConfig, **kw: Any) -> Any:
        return await self._graph(graph, "invoke", inputs, config, **kw)

    async def get_state(self, graph: Any, config: RunnableConfig, **kw: Any) -> Any:
        return await self._graph(graph, "get_state", config, **kw)

    async def update_state(self, graph: Any, config: RunnableConfig, values: Any, **kw: Any) -> Any:
        return await self._graph(graph, "update_state", config, values, **kw)

    async def get_state_history(self, graph: Any, config: RunnableConfig, **kw: Any) -> list[Any]:
        if self.is_async:
            return [s async for s in graph.aget_state_history(config, **kw)]
        return list(graph.get_state_history(config, **kw))


def restarted(saver_factory: Any, mode: str) -> Door:
    """A second saver on the same database (a new process, in spirit), through ``mode``."""
    return Door(saver_factory(shared=True), mode)


def _in_a_thread(name: str) -> Callable[..., Awaitable[Any]]:
    """``aname`` for :class:`SyncMethodsAdapter`: the inner saver's sync ``name`` run in a
    worker thread."""

    async def method(self: SyncMethodsAdapter, *args: Any, **kwargs: Any) -> Any:
        return await asyncio.to_thread(getattr(self.inner, name), *args, **kwargs)

    method.__name__ = method.__qualname__ = "a" + name
    return method


class SyncMethodsAdapter(BaseCheckpointSaver[str]):
    """Exposes a saver's SYNC methods as async ones, for the conformance suite.

    The suite drives only ``a*`` methods; each one here runs the wrapped saver's sync
    twin in a worker thread (``asyncio.to_thread``), so the suite tests the sync door.
    They are made for every pair of ``BaseCheckpointSaver`` that ``SQLAlchemySaver``
    implements (:func:`twins`); ``alist`` (an async generator) is written out.
    """

    def __init__(self, inner: Any) -> None:
        super().__init__(serde=inner.serde)
        self.inner = inner

    async def alist(self, config: RunnableConfig | None, **kwargs: Any) -> Any:
        for item in await asyncio.to_thread(lambda: list(self.inner.list(config, **kwargs))):
            yield item

    def get_next_version(self, current: Any, channel: None) -> Any:
        return self.inner.get_next_version(current, channel)


for _name in set(twins(BaseCheckpointSaver)) & set(twins(SQLAlchemySaver)):
    setattr(SyncMethodsAdapter, "a" + _name, _in_a_thread(_name))
