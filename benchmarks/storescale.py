"""``python -m benchmarks --store --scale``: what each store operation costs as the store
grows, ``SQLAlchemyStore`` beside ``SqliteStore`` and ``PostgresStore`` in this process.

Places: a SQLite file, PostgreSQL (``LGSA_BENCH_POSTGRES_URL``), MariaDB
(``LGSA_BENCH_MARIADB_URL``) and the pgvector server (``LGSA_PGVECTOR_URL``; without it
that place is skipped, the reason in the report). Official stores: ``SqliteStore`` on the
SQLite file, ``PostgresStore`` on the pgvector server (its own database, its HNSW index).
Every size has its own stores, loaded through each store's own ``batch`` (500 puts a
call, embeddings included; then ANALYZE, as in :mod:`.store`), and all of them exist at
once: the sizes are timed side by side in rounds, each round timing every operation at
every size (the order of the sizes turning), the stores of a size taking turns (who goes
first alternating). A figure is the median call over the rounds. Data and calls in
:mod:`.storescalework`; rows, tables and the document in :mod:`.storescalereport`.
"""

from __future__ import annotations

import gc
import os
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

from langgraph.store.base import BaseStore

from langgraph.checkpoint.sqlalchemy.dialects import AnnParams

from . import storescalework as w
from .backends import Servers, analyze
from .backends import Store as Place
from .store import existing
from .storework import STORE_TABLES

__all__ = [
    "FULL_CALLS",
    "FULL_SIZES",
    "OPS",
    "PLACES",
    "QUICK_CALLS",
    "QUICK_SIZES",
    "SMOKE_CALLS",
    "SMOKE_SIZES",
    "Calls",
    "StoreScale",
    "sizes_for",
]

FULL_SIZES = (10_000, 100_000, 1_000_000)
#: Sizes run unless ``--scale-max`` asks for more: 1,000,000 memories load for about
#: half an hour a store on 2 CPUs (the HNSW index is kept up at every insert).
DEFAULT_MAX = 100_000
QUICK_SIZES = (1_000, 5_000)
#: The smoke mode of the tests (tests/meta/test_benchmarks_store_scale.py).
SMOKE_SIZES = (200, 400)
PLACES = ("sqlite", "postgres", "mariadb", "pgvector")

#: ``(op, label)`` in table order.
OPS: tuple[tuple[str, str], ...] = (
    ("put", "put, one memory a call (no embedding)"),
    ("put_batch", "batch of 500 puts (no embedding)"),
    ("get", "get"),
    ("search_range_ns", 'search(("memories", "u<n>"), filter={"score": {"$gt": 0.9}}, limit=10)'),
    ("search_range", 'search(("memories",), filter={"score": {"$gt": 0.99}}, limit=10)'),
    ("list_namespaces", 'list_namespaces(prefix=("memories",), limit=100)'),
    ("vector_exact", 'search(("memories",), query=q, limit=10), exact'),
    ("vector_ann", 'search(("memories",), query=q, limit=10), HNSW index'),
)
COMMON = ("put", "put_batch", "get", "search_range_ns", "search_range", "list_namespaces")


@dataclass(frozen=True)
class Calls:
    """Calls a round per operation, store and size (at most: ``budget`` seconds cut it
    short, after at least 3), ``warm`` untimed calls first."""

    put: int = 40
    put_batch: int = 3
    get: int = 40
    search_range_ns: int = 20
    search_range: int = 10
    list_namespaces: int = 10
    vector_exact: int = 8
    vector_ann: int = 20
    warm: int = 2
    budget: float = 3.0
    rounds: int = 3
    #: Queries of :data:`.storescalework.QUERIES` scored for recall@10 on an exact
    #: store off the pgvector server (a check that it is exact); the pgvector stores
    #: answer every query.
    exact_recall_queries: int = 4


FULL_CALLS = Calls()
QUICK_CALLS = Calls(
    put=10,
    put_batch=2,
    get=10,
    search_range_ns=5,
    search_range=5,
    list_namespaces=5,
    vector_exact=3,
    vector_ann=5,
    budget=1.0,
    rounds=2,
)

SMOKE_CALLS = Calls(
    put=3,
    put_batch=1,
    get=3,
    search_range_ns=3,
    search_range=3,
    list_namespaces=3,
    vector_exact=3,
    vector_ann=3,
    warm=1,
    budget=0.2,
    rounds=2,
    exact_recall_queries=2,
)


def sizes_for(base: tuple[int, ...], cap: int | None) -> list[int]:
    """``base`` up to ``cap`` (default :data:`DEFAULT_MAX`)."""
    limit = cap or DEFAULT_MAX
    return [s for s in base if s <= limit] or [base[0]]


def stores(place: str, vec_official: bool) -> dict[str, tuple[str, str | None, bool]]:
    """Per store of ``place``: ``(impl, ann kind, loaded)``; ``ours_flat`` shares the
    database of ``ours`` (not loaded again)."""
    if place == "pgvector":
        return {
            "ours": ("ours", "hnsw", True),
            "ours_flat": ("ours", "flat", False),
            "official": ("official", "hnsw", True),
        }
    if place == "sqlite":
        return {"ours": ("ours", None, True), "official": ("official", None, True)}
    return {"ours": ("ours", None, True)}


def ops_of(place: str, store: str, vec_official: bool) -> tuple[str, ...]:
    """The operations timed on ``store`` of ``place``."""
    if place == "pgvector":
        return {"ours": (*COMMON, "vector_ann"), "ours_flat": ("vector_exact",)}.get(
            store, (*COMMON, "vector_ann")
        )
    if store == "official" and not vec_official:
        return COMMON
    return (*COMMON, "vector_exact")


class StoreScale:
    """The run: ``raw[(place, store, op)][size]`` = per-call seconds; ``load`` the
    loading figures, ``recall`` recall@10 per vector store and size, ``walk`` the HNSW
    index walks on the pgvector server (:meth:`walks`), ``skipped`` what
    did not run and why.

    Args:
        servers: SQLite, PostgreSQL and MariaDB places.
        pgvector: Places on the pgvector server, or None.
        sizes: Memories per store, ascending.
        places: Of :data:`PLACES`.
        calls: How many calls to time.
        log: Progress sink.
        ops: Of :data:`OPS`, the operations to time (default: all). Without a vector
            operation, the stores are filled without embeddings (no index config), so
            a run of the other operations reaches 1,000,000 memories in minutes rather
            than the HNSW index's hours.
    """

    def __init__(
        self,
        servers: Servers,
        pgvector: w.PgvectorServer | None,
        sizes: list[int],
        places: list[str],
        calls: Calls,
        log: Callable[[str], None],
        ops: tuple[str, ...] | None = None,
    ) -> None:
        self.servers = servers
        self.ops = ops or tuple(op for op, _ in OPS)
        self.vectors = any(op.startswith("vector_") for op in self.ops)
        self.pgvector = pgvector
        self.sizes = sizes
        self.places = places
        self.calls = calls
        self.log = log
        self.raw: dict[tuple[str, str, str], dict[int, list[float]]] = {}
        self.load: list[dict[str, Any]] = []
        self.recall: list[dict[str, Any]] = []
        self.walk: list[dict[str, Any]] = []
        self.skipped: list[dict[str, str]] = []
        self.ann: dict[str, str | None] = {}
        self.vec_official = w.sqlite_vec_missing() is None
        if not self.vec_official and "sqlite" in places and self.vectors:
            self.skipped.append(
                {
                    "place": "sqlite",
                    "store": "official",
                    "ops": "vector_exact, recall",
                    "reason": str(w.sqlite_vec_missing()),
                }
            )

    def run(self) -> None:
        for place in self.places:
            self.place(place)

    def _stores(self, place: str) -> dict[str, tuple[str, str | None, bool]]:
        """:func:`stores`, less the exact-search store when no vector op is timed."""
        found = stores(place, self.vec_official)
        return {k: v for k, v in found.items() if self.vectors or k != "ours_flat"}

    def _ops(self, place: str, store: str) -> tuple[str, ...]:
        return tuple(op for op in ops_of(place, store, self.vec_official) if op in self.ops)

    def _new(self, place: str) -> Place:
        if place == "pgvector":
            assert self.pgvector is not None
            return self.pgvector.new_store()
        return self.servers.new_store(place)

    def _index(self, place: str, store: str) -> dict[str, Any] | None:
        if not self.vectors:
            return None
        impl, kind, _ = stores(place, self.vec_official)[store]
        if impl == "official" and place == "sqlite" and not self.vec_official:
            return None
        return w.index_config(kind)

    def place(self, place: str) -> None:
        made: dict[tuple[int, str], Place] = {}
        try:
            for size in self.sizes:
                for store, (_impl, _kind, loaded) in self._stores(place).items():
                    if loaded:
                        made[size, store] = self._fill(place, size, store)
                    else:  # ours_flat: the database of ours
                        made[size, store] = made[size, "ours"]
            self.measure(place, made)
        finally:
            for key, where in made.items():
                if key[1] == "ours_flat" or place == "pgvector":
                    continue  # dropped with the pgvector server's databases
                self.servers.drop(where)

    def _fill(self, place: str, size: int, store: str) -> Place:
        impl = stores(place, self.vec_official)[store][0]
        where = self._new(place)
        index = self._index(place, store)
        with w.open_store(impl, where, index) as s:
            gc.collect()
            rate = w.fill(s, size, vectors=index is not None)
            ann = getattr(s, "ann", None)
        t0 = time.perf_counter()
        names = existing(where, STORE_TABLES[impl])
        if names and not where.url.startswith("sqlite"):
            analyze(where, names)
        self.load.append(
            {
                "place": place,
                "store": store,
                "size": size,
                "vectors": index is not None,
                "items_per_s": round(rate),
                "seconds": round(size / rate, 1),
                "analyze_seconds": round(time.perf_counter() - t0, 1),
            }
        )
        if impl == "ours" and index is not None:
            self.ann[place] = ann
        self.log(f"store scale {place}/{store}: {size:,} memories at {rate:,.0f} items/s")
        return where

    def measure(self, place: str, made: dict[tuple[int, str], Place]) -> None:
        c = self.calls
        names = list(self._stores(place))
        with ExitStack() as stack:
            opened: dict[tuple[int, str], BaseStore] = {}
            for (size, store), where in made.items():
                impl = stores(place, self.vec_official)[store][0]
                opened[size, store] = stack.enter_context(
                    w.open_store(impl, where, self._index(place, store))
                )
            writes = {k: w.Writes() for k in opened}
            for n in range(c.rounds):
                order = self.sizes[n % len(self.sizes) :] + self.sizes[: n % len(self.sizes)]
                for op, _label in OPS:
                    for size in order:
                        for store in names if n % 2 == 0 else names[::-1]:
                            if op not in self._ops(place, store):
                                continue
                            calls = w.op_calls(
                                op,
                                opened[size, store],
                                size,
                                getattr(c, op) + c.warm,
                                n,
                                writes[size, store],
                            )
                            gc.collect()
                            seconds = _time(calls, c.warm, c.budget)
                            got = self.raw.setdefault((place, store, op), {})
                            got.setdefault(size, []).extend(seconds)
                            ms = sorted(seconds)[len(seconds) // 2] * 1000
                            self.log(
                                f"{place} round {n + 1} {size:>9,} {store:9} {op:16} "
                                f"{ms:9.2f} ms ({len(seconds)} calls)"
                            )
            if self.vectors:
                self.recalls(place, opened)
                if place == "pgvector":
                    self.walks(made)

    def recalls(self, place: str, opened: dict[tuple[int, str], BaseStore]) -> None:
        """recall@10 of every vector store against :func:`.exact_top` (untimed)."""
        for size in self.sizes:
            truth = w.exact_top(size)
            for (s, store), st in opened.items():
                if s != size or not {"vector_exact", "vector_ann"} & set(
                    ops_of(place, store, self.vec_official)
                ):
                    continue
                n = (
                    len(w.QUERIES)
                    if place == "pgvector"
                    else min(len(w.QUERIES), self.calls.exact_recall_queries)
                )
                hits = [
                    len(set(w.vector_keys(st, w.QUERIES[j])) & set(truth[j])) / 10 for j in range(n)
                ]
                self.recall.append(
                    {
                        "place": place,
                        "store": store,
                        "size": size,
                        "queries": n,
                        "recall_at_10": round(sum(hits) / n, 4),
                        "worst": min(hits),
                    }
                )
                self.log(f"recall@10 {place}/{store} at {size:,}: {sum(hits) / n:.3f}")

    def walks(self, made: dict[tuple[int, str], Place]) -> None:
        """The HNSW walk of each store's index on the server (:func:`.index_walk`), at
        the ``ef_search`` its searches use (ours: the default; ``PostgresStore`` sets
        none: pgvector's 40)."""
        ef = {"ours": AnnParams().ef_search, "official": 40}
        for (size, store), where in made.items():
            if store not in ef:
                continue
            got = w.index_walk(where, store, ef[store])
            self.walk.append({"store": store, "size": size, "ef_search": ef[store], **got})
            self.log(
                f"index walk {store} at {size:,}: {got['pages']:.0f} pages, "
                f"{got['server_ms']:.3f} ms"
            )


def _time(calls: list[Callable[[], Any]], warm: int, budget: float) -> list[float]:
    """The first ``warm`` calls untimed, then each call timed until ``budget`` seconds
    (at least 3 calls, or all there are)."""
    warm = min(warm, max(0, len(calls) - 1))
    for call in calls[:warm]:
        call()
    seconds: list[float] = []
    t_end = time.perf_counter() + budget
    for call in calls[warm:]:
        t0 = time.perf_counter()
        call()
        seconds.append(time.perf_counter() - t0)
        if len(seconds) >= 3 and time.perf_counter() > t_end:
            break
    return seconds


def pgvector_url() -> str | None:
    return os.environ.get("LGSA_PGVECTOR_URL") or None
