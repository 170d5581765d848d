"""The steps of a plan that are not database operations: a pause, a blocking call, an
embedding call.

A plan (:data:`._engine.doors.Plan`) is written once for both doors. Its database
operations are ``(access, op, args)`` tuples that the runner runs on a connection; what
else it must wait for (a pause between two tries of a lock, a lock file, an embedding
model) differs between the doors: the sync door blocks, the async door awaits. Such a
step is a :class:`Step`, performed by :meth:`Step.do` when the sync door drives the plan
and by :meth:`Step.ado` when the async door does, and its result is sent back into the
plan like an operation's. So a lock's waits and retries, or a store batch's embedding,
stay one plan instead of a sync function and its async twin.

No SQLAlchemy and no LangGraph here: an embedding model is anything with LangChain's
``embed_documents``/``aembed_documents`` and ``embed_query``/``aembed_query`` methods.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

__all__ = ["Blocking", "Embed", "EmbedQueries", "Embedder", "Pause", "Step"]


class Embedder(Protocol):
    """What an embedding step calls: LangChain's ``Embeddings`` methods."""

    def embed_documents(self, texts: list[str]) -> list[list[float]]: ...

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]: ...

    def embed_query(self, text: str) -> list[float]: ...

    async def aembed_query(self, text: str) -> list[float]: ...


class Step:
    """A step of a plan that is not a database operation (see the module docstring)."""

    __slots__ = ()

    def do(self) -> Any:
        """Perform the step on the sync door (blocking the calling thread)."""
        raise NotImplementedError

    async def ado(self) -> Any:
        """Perform the step on the async door (without blocking the event loop)."""
        raise NotImplementedError


@dataclass(frozen=True, slots=True)
class Pause(Step):
    """Wait ``seconds`` (``time.sleep`` on the sync door, ``asyncio.sleep`` on the async
    one); sends None back."""

    seconds: float

    def do(self) -> None:
        time.sleep(self.seconds)

    async def ado(self) -> None:
        await asyncio.sleep(self.seconds)


@dataclass(frozen=True, slots=True)
class Blocking(Step):
    """``fn(*args)``, a call that blocks on something other than the engines (a lock
    file): called in place on the sync door, in a worker thread on the async one (the
    loop stays free); sends its result back."""

    fn: Callable[..., Any]
    args: tuple[Any, ...] = ()

    def do(self) -> Any:
        return self.fn(*self.args)

    async def ado(self) -> Any:
        return await asyncio.to_thread(self.fn, *self.args)


@dataclass(frozen=True, slots=True)
class Embed(Step):
    """The vectors of ``texts`` (documents): ``embed_documents`` on the sync door,
    ``aembed_documents`` on the async one; sends the list of vectors back."""

    embedder: Embedder
    texts: Sequence[str]

    def do(self) -> list[list[float]]:
        return self.embedder.embed_documents(list(self.texts))

    async def ado(self) -> list[list[float]]:
        return await self.embedder.aembed_documents(list(self.texts))


@dataclass(frozen=True, slots=True)
class EmbedQueries(Step):
    """The vector of each of ``queries``, in their order: ``embed_query`` one after the
    other on the sync door, ``aembed_query`` all at once on the async one; sends the list
    of vectors back."""

    embedder: Embedder
    queries: Sequence[str]

    def do(self) -> list[list[float]]:
        return [self.embedder.embed_query(q) for q in self.queries]

    async def ado(self) -> list[list[float]]:
        found = await asyncio.gather(*(self.embedder.aembed_query(q) for q in self.queries))
        return list(found)
