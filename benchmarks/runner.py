"""The run: every workload, each repeat, our saver and the official twin alternately.

Write workloads (puts, put_writes, graph, workers) give every saver a fresh, empty store
for each measurement. Read workloads share, per saver and dialect, stores filled once by
that saver's own ``put`` (they only read them), with both savers of a pair open and
alternating per workload. Results are raw figures keyed
``(metric, dialect, mode, impl)``, one per repeat; ``report`` turns them into ratios.

On SQLite every write workload also runs the official saver at our ``synchronous =
NORMAL`` (impl :data:`NORMAL`), beside the official saver as it ships (``synchronous =
FULL``, impl ``official``): the first makes the same durability promise as ours.
"""

from __future__ import annotations

import asyncio
import gc
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import AsyncExitStack, ExitStack
from dataclasses import dataclass
from functools import partial
from typing import Any

from . import workloads as w
from .backends import (
    Servers,
    Store,
    analyze,
    copy_thread,
    has_official,
    open_async,
    open_sync,
    storage_bytes,
    tables,
)
from .data import REALISTIC, History
from .workloads import thread_config

MODES = ("sync", "async")
Key = tuple[str, str, str, str]  # (metric, dialect, mode, impl); mode "-" when it has none
#: The official SQLite saver at our ``synchronous = NORMAL`` (write workloads only).
NORMAL = "official_normal"


def opener(impl: str) -> tuple[str, dict[str, Any]]:
    """The saver :func:`.backends.open_sync` / ``open_async`` opens for ``impl``, and
    the options that make it so."""
    if impl == NORMAL:
        return "official", {"normal": True}
    return impl, {}


@dataclass(frozen=True)
class Sizes:
    repeats: int = 3
    puts: int = 500  # put, realistic
    big_puts: int = 20  # put, realistic + 1 MB
    write_calls: int = 500  # put_writes
    short: int = 1_000  # history lengths for get_tuple / list(thread)
    long: int = 10_000
    reads: int = 100  # get_tuple calls per measurement
    list_calls: int = 20  # list(thread, limit=10) calls per measurement
    global_calls: int = 5  # list(None, ...) calls per measurement
    threads: int = 100  # list(None) store: threads x per_thread checkpoints
    per_thread: int = 100
    delete_size: int = 1_000
    invokes: int = 200
    short_lived: int = 50  # short-lived saver cycles (open, 3 invokes, close)
    workers: int = 16
    worker_puts: int = 50
    unchanged: int = 100  # checkpoints carrying the unchanged 1 MB channel


FULL = Sizes()
QUICK = Sizes(
    repeats=1,
    puts=100,
    big_puts=5,
    write_calls=100,
    short=200,
    long=1_000,
    reads=30,
    list_calls=5,
    global_calls=2,
    threads=20,
    per_thread=50,
    delete_size=200,
    invokes=50,
    short_lived=10,
    worker_puts=10,
    unchanged=20,
)


_T0 = time.perf_counter()


def log(message: str) -> None:
    """Progress on stderr, with the seconds since the harness was imported."""
    print(f"[{time.perf_counter() - _T0:6.1f}s] {message}", file=sys.stderr, flush=True)


@dataclass(frozen=True)
class _Read:
    """One read workload: ``metric`` measured on store "h" or "g" with these arguments."""

    metric: str
    store: str
    args: tuple[Any, ...]
    kwargs: dict[str, Any]


@dataclass(frozen=True)
class _ReadStores:
    impl: str
    h: Store
    g: Store
    plan: list[_Read]


class Bench:
    def __init__(self, servers: Servers, sizes: Sizes, dialects: tuple[str, ...]) -> None:
        self.servers = servers
        self.s = sizes
        self.dialects = dialects
        self.raw: dict[Key, list[float]] = defaultdict(list)

    def run(self) -> dict[Key, list[float]]:
        self.writes()
        self.reads()
        self.deletes()
        self.unchanged_channel()
        return dict(self.raw)

    # -- scheduling ---------------------------------------------------------------------------

    def impls(self, dialect: str, *, writes: bool = False) -> tuple[str, ...]:
        """The savers of a workload; ``writes`` on SQLite: also the official saver at our
        ``synchronous`` setting (:data:`NORMAL`)."""
        if not has_official(dialect):
            return ("ours",)
        if writes and dialect == "sqlite":
            return ("ours", NORMAL, "official")
        return ("ours", "official")

    def lineup(
        self, rep: int, *, writes: bool = False
    ) -> Iterator[tuple[str, str, tuple[str, ...]]]:
        """``(dialect, mode, impls)`` of one repeat; who goes first alternates by repeat."""
        for dialect in self.dialects:
            for mode in MODES:
                impls = self.impls(dialect, writes=writes)
                yield dialect, mode, impls if rep % 2 == 0 else impls[::-1]

    def on_fresh_stores(
        self,
        metric: str,
        body: Callable[[Any], float],
        abody: Callable[[Any], Any],
        *,
        pool: int = 1,
        after: Callable[[str, str, str, Store], None] | None = None,
        each_repeat: Callable[[], None] | None = None,
        opened: bool = True,
    ) -> None:
        """Measure ``metric`` on a new empty store per saver and repeat (on SQLite also
        with the official saver at our ``synchronous`` setting, :data:`NORMAL`).

        ``opened``: ``body`` gets the opened saver; False: the store's tables are made
        first, and ``body`` gets a function that opens (and sets up) a saver on it."""
        for rep in range(self.s.repeats):
            log(f"{metric}: repeat {rep + 1}/{self.s.repeats}")
            for dialect, mode, impls in self.lineup(rep, writes=True):
                for impl in impls:
                    store = self.servers.new_store(dialect)
                    saver_impl, normal = opener(impl)
                    opts: dict[str, Any] = {"pool": pool, **normal}
                    try:
                        if not opened:
                            with open_sync(saver_impl, store, **opts):
                                pass  # the tables: an existing database
                            gc.collect()
                        if mode == "sync" and opened:
                            with open_sync(saver_impl, store, **opts) as saver:
                                gc.collect()
                                value = body(saver)
                        elif mode == "sync":
                            value = body(partial(open_sync, saver_impl, store, **opts))
                        elif opened:
                            value = asyncio.run(_opened(saver_impl, store, opts, abody))
                        else:
                            value = asyncio.run(
                                abody(partial(open_async, saver_impl, store, **opts))
                            )
                        self.raw[(metric, dialect, mode, impl)].append(value)
                        if after is not None:
                            after(dialect, mode, impl, store)
                    finally:
                        self.servers.drop(store)
            if each_repeat is not None:
                each_repeat()

    # -- write workloads ------------------------------------------------------------------------

    def writes(self) -> None:
        s = self.s
        self.on_fresh_stores(
            "put",
            partial(w.put, n=s.puts, big=False),
            partial(w.aput, n=s.puts, big=False),
            after=self._storage,
        )
        self.on_fresh_stores(
            "put_1mb",
            partial(w.put, n=s.big_puts, big=True),
            partial(w.aput, n=s.big_puts, big=True),
        )
        self.on_fresh_stores(
            "put_writes",
            partial(w.put_writes, n=s.write_calls),
            partial(w.aput_writes, n=s.write_calls),
        )
        self.on_fresh_stores(
            "graph",
            partial(w.graph, n=s.invokes),
            partial(w.agraph, n=s.invokes),
            each_repeat=self._graph_without_checkpointer,
        )
        self.on_fresh_stores(
            "short_lived",
            partial(w.short_lived, n=s.short_lived),
            partial(w.ashort_lived, n=s.short_lived),
            opened=False,
        )
        self.on_fresh_stores(
            "workers",
            partial(w.workers, n_workers=s.workers, n=s.worker_puts),
            partial(w.aworkers, n_workers=s.workers, n=s.worker_puts),
            pool=s.workers,
        )

    def _storage(self, dialect: str, mode: str, impl: str, store: Store) -> None:
        if mode == "sync" and impl != NORMAL:  # the same rows as "official"
            size = storage_bytes(store, tables(impl, dialect))
            self.raw[("storage", dialect, "-", impl)].append(size / (self.s.puts + w.WARMUP))

    def _graph_without_checkpointer(self) -> None:
        gc.collect()
        self.raw[("graph_nocp", "-", "sync", "none")].append(w.graph(None, self.s.invokes))
        self.raw[("graph_nocp", "-", "async", "none")].append(
            asyncio.run(w.agraph(None, self.s.invokes))
        )

    # -- read workloads -------------------------------------------------------------------------

    def reads(self) -> None:
        s = self.s
        filled: dict[tuple[str, str], _ReadStores] = {}
        try:
            for dialect in self.dialects:
                for impl in self.impls(dialect):
                    log(f"fill: {impl} on {dialect}")
                    filled[(dialect, impl)] = self._fill(dialect, impl)
            for rep in range(s.repeats):
                log(f"reads: repeat {rep + 1}/{s.repeats}")
                for dialect, mode, impls in self.lineup(rep):
                    stores = [filled[(dialect, impl)] for impl in impls]
                    if mode == "sync":
                        self._reads_sync(dialect, stores)
                    else:
                        asyncio.run(self._reads_async(dialect, stores))
            log("memory: list(None)")
            for (dialect, impl), stores in filled.items():
                with open_sync(impl, stores.g) as saver:
                    gc.collect()
                    value = w.list_memory(saver, s.threads * s.per_thread)
                self.raw[("memory", dialect, "-", impl)].append(value)
        finally:
            for stores in filled.values():
                self.servers.drop(stores.h)
                self.servers.drop(stores.g)

    def _fill(self, dialect: str, impl: str) -> _ReadStores:
        """Two stores filled by the saver's own sync ``put``: "h" holds a short and a long
        thread, "g" holds ``threads`` threads of ``per_thread`` checkpoints, put round robin
        (so that checkpoint ids interleave across threads, as concurrent users make them)."""
        s = self.s
        h, g = self.servers.new_store(dialect), self.servers.new_store(dialect)
        ids = {}
        with open_sync(impl, h, fill=True) as saver:
            for name, n in (("short", s.short), ("long", s.long)):
                history = History(saver, f"h-{name}")
                for _ in range(n):
                    history.put()
                ids[name] = history.ids
        with open_sync(impl, g, fill=True) as saver:
            threads = [History(saver, f"g-{i}") for i in range(s.threads)]
            for _ in range(s.per_thread):
                for history in threads:
                    history.put()
        analyze(h, tables(impl, dialect))
        analyze(g, tables(impl, dialect))
        return _ReadStores(impl, h, g, self._read_plan(ids))

    def _read_plan(self, ids: dict[str, list[str]]) -> list[_Read]:
        s = self.s
        plan: list[_Read] = []
        for name in ("short", "long"):
            thread, thread_ids = f"h-{name}", ids[name]
            spread = [thread_ids[k * len(thread_ids) // s.reads] for k in range(s.reads)]
            plan += [
                _Read(f"get_latest_{name}", "h", ([thread_config(thread)] * s.reads,), {}),
                _Read(f"get_id_{name}", "h", ([thread_config(thread, i) for i in spread],), {}),
            ]
        for name in ("short", "long"):
            args = (s.list_calls, 10, thread_config(f"h-{name}"))
            plan.append(_Read(f"list_thread_{name}", "h", args, {"limit": 10}))
        plan.append(_Read("list_global", "g", (s.global_calls, 10, None), {"limit": 10}))
        flt = {"source": "loop", "step": 5}
        plan.append(_Read("list_filter", "g", (s.global_calls, s.threads, None), {"filter": flt}))
        return plan

    def _reads_sync(self, dialect: str, stores: list[_ReadStores]) -> None:
        """Both savers open; each read workload runs on one, then the other."""
        with ExitStack() as stack:
            savers = [
                {
                    "h": stack.enter_context(open_sync(x.impl, x.h)),
                    "g": stack.enter_context(open_sync(x.impl, x.g)),
                }
                for x in stores
            ]
            for k in range(len(stores[0].plan)):
                for x, saver in zip(stores, savers, strict=True):
                    read = x.plan[k]
                    body = w.get_tuple if read.metric.startswith("get_") else w.list_
                    gc.collect()
                    value = body(saver[read.store], *read.args, **read.kwargs)
                    self.raw[(read.metric, dialect, "sync", x.impl)].append(value)

    async def _reads_async(self, dialect: str, stores: list[_ReadStores]) -> None:
        async with AsyncExitStack() as stack:
            savers = [
                {
                    "h": await stack.enter_async_context(open_async(x.impl, x.h)),
                    "g": await stack.enter_async_context(open_async(x.impl, x.g)),
                }
                for x in stores
            ]
            for k in range(len(stores[0].plan)):
                for x, saver in zip(stores, savers, strict=True):
                    read = x.plan[k]
                    body = w.aget_tuple if read.metric.startswith("get_") else w.alist
                    gc.collect()
                    value = await body(saver[read.store], *read.args, **read.kwargs)
                    self.raw[(read.metric, dialect, "async", x.impl)].append(value)

    # -- delete_thread --------------------------------------------------------------------------

    def deletes(self) -> None:
        """One store per saver: a thread of ``delete_size`` checkpoints put by the saver,
        copied (INSERT ... SELECT) to one thread per mode and repeat, each deleted once."""
        s = self.s
        stores: dict[tuple[str, str], Store] = {}
        try:
            for dialect in self.dialects:
                for impl in self.impls(dialect, writes=True):
                    log(f"fill: delete_thread, {impl} on {dialect}")
                    store = stores[(dialect, impl)] = self.servers.new_store(dialect)
                    with open_sync(opener(impl)[0], store, fill=True) as saver:
                        h = History(saver, "d-source")
                        for _ in range(s.delete_size):
                            h.put()
                    targets = [f"d-{mode}-{rep}" for mode in MODES for rep in range(s.repeats)]
                    names = tables(opener(impl)[0], dialect)
                    copy_thread(store, names, "d-source", targets)
                    analyze(store, names)
            for rep in range(s.repeats):
                log(f"delete_thread: repeat {rep + 1}/{s.repeats}")
                for dialect, mode, impls in self.lineup(rep, writes=True):
                    for impl in impls:
                        store, thread = stores[(dialect, impl)], f"d-{mode}-{rep}"
                        saver_impl, normal = opener(impl)
                        if mode == "sync":
                            with open_sync(saver_impl, store, **normal) as saver:
                                value = w.delete_thread(saver, thread)
                        else:
                            body = partial(w.adelete_thread, thread_id=thread)
                            opts = {"pool": 1, **normal}
                            value = asyncio.run(_opened(saver_impl, store, opts, body))
                        self.raw[("delete", dialect, mode, impl)].append(value)
        finally:
            for store in stores.values():
                self.servers.drop(store)

    # -- storage of an unchanged 1 MB channel -------------------------------------------------

    def unchanged_channel(self) -> None:
        """Bytes of ``unchanged`` checkpoints carrying a 1 MB channel that never changes,
        minus the bytes of the same checkpoints without it: what that channel costs."""
        for dialect in self.dialects:
            for impl in self.impls(dialect):
                log(f"storage: unchanged 1 MB channel, {impl} on {dialect}")
                sizes = []
                for big in (True, False):
                    store = self.servers.new_store(dialect)
                    try:
                        with open_sync(impl, store) as saver:
                            h = History(saver, "t", big=big, changes=REALISTIC)
                            for _ in range(self.s.unchanged):
                                h.put()
                        sizes.append(storage_bytes(store, tables(impl, dialect)))
                    finally:
                        self.servers.drop(store)
                self.raw[("big_unchanged", dialect, "-", impl)].append((sizes[0] - sizes[1]) / 1e6)


async def _opened(
    impl: str, store: Store, opts: dict[str, Any], abody: Callable[[Any], Any]
) -> float:
    async with open_async(impl, store, **opts) as saver:
        gc.collect()
        return float(await abody(saver))
