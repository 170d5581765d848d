"""One awaitable API over the sync or the async methods of a saver or a graph.

Test bodies are written once against :class:`Door`; the ``mode`` fixture decides whether
each call goes to ``saver.put`` or ``await saver.aput`` (and ``graph.invoke`` or
``await graph.ainvoke``). Sync calls are made directly on the event loop's thread, which
also proves that sync methods called from a running loop do not hang.
"""

from __future__ import annotations

import asyncio
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointTuple


class Door:
    """The saver (and graphs compiled with it) through one mode: "sync" or "async"."""

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

    async def put(self, *args: Any, **kwargs: Any) -> RunnableConfig:
        return await self.call("put", *args, **kwargs)  # type: ignore[no-any-return]

    async def put_writes(self, *args: Any, **kwargs: Any) -> None:
        await self.call("put_writes", *args, **kwargs)

    async def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return await self.call("get_tuple", config)  # type: ignore[no-any-return]

    async def list(self, config: RunnableConfig | None, **kwargs: Any) -> list[CheckpointTuple]:
        if self.is_async:
            return [t async for t in self.saver.alist(config, **kwargs)]
        return list(self.saver.list(config, **kwargs))

    async def delete_thread(self, thread_id: str) -> None:
        await self.call("delete_thread", thread_id)

    async def prune(self, thread_ids: Any, **kwargs: Any) -> None:
        await self.call("prune", thread_ids, **kwargs)

    async def copy_thread(self, source: str, target: str) -> None:
        await self.call("copy_thread", source, target)

    async def delete_for_runs(self, run_ids: Any) -> None:
        await self.call("delete_for_runs", run_ids)

    async def get_delta_channel_history(self, *, config: RunnableConfig, channels: Any) -> Any:
        return await self.call("get_delta_channel_history", config=config, channels=channels)

    async def setup(self) -> None:
        await self.call("setup")

    # graphs ----------------------------------------------------------------------

    async def invoke(self, graph: Any, inputs: Any, config: RunnableConfig, **kw: Any) -> Any:
        if self.is_async:
            return await graph.ainvoke(inputs, config, **kw)
        return graph.invoke(inputs, config, **kw)

    async def get_state(self, graph: Any, config: RunnableConfig, **kw: Any) -> Any:
        if self.is_async:
            return await graph.aget_state(config, **kw)
        return graph.get_state(config, **kw)

    async def update_state(self, graph: Any, config: RunnableConfig, values: Any, **kw: Any) -> Any:
        if self.is_async:
            return await graph.aupdate_state(config, values, **kw)
        return graph.update_state(config, values, **kw)

    async def get_state_history(self, graph: Any, config: RunnableConfig, **kw: Any) -> list[Any]:
        if self.is_async:
            return [s async for s in graph.aget_state_history(config, **kw)]
        return list(graph.get_state_history(config, **kw))


class SyncMethodsAdapter(BaseCheckpointSaver[str]):
    """Exposes a saver's SYNC methods as async ones, for the conformance suite.

    The suite drives only ``a*`` methods; each one here runs the wrapped saver's sync
    twin in a worker thread (``asyncio.to_thread``), so the suite tests the sync door.
    """

    def __init__(self, inner: Any) -> None:
        super().__init__(serde=inner.serde)
        self.inner = inner

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return await asyncio.to_thread(self.inner.get_tuple, config)  # type: ignore[no-any-return]

    async def alist(self, config: RunnableConfig | None, **kwargs: Any) -> Any:
        for item in await asyncio.to_thread(lambda: list(self.inner.list(config, **kwargs))):
            yield item

    async def aput(self, *args: Any, **kwargs: Any) -> RunnableConfig:
        return await asyncio.to_thread(self.inner.put, *args, **kwargs)  # type: ignore[no-any-return]

    async def aput_writes(self, *args: Any, **kwargs: Any) -> None:
        await asyncio.to_thread(self.inner.put_writes, *args, **kwargs)

    async def adelete_thread(self, thread_id: str) -> None:
        await asyncio.to_thread(self.inner.delete_thread, thread_id)

    def get_next_version(self, current: Any, channel: None) -> Any:
        return self.inner.get_next_version(current, channel)

    async def adelete_for_runs(self, run_ids: Any) -> None:
        await asyncio.to_thread(self.inner.delete_for_runs, run_ids)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        await asyncio.to_thread(self.inner.copy_thread, source_thread_id, target_thread_id)

    async def aprune(self, thread_ids: Any, *, strategy: str = "keep_latest") -> None:
        await asyncio.to_thread(self.inner.prune, thread_ids, strategy=strategy)

    async def aget_delta_channel_history(self, *, config: RunnableConfig, channels: Any) -> Any:
        return await asyncio.to_thread(
            lambda: self.inner.get_delta_channel_history(config=config, channels=channels)
        )
