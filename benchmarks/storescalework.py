"""The data of the store scale run (``python -m benchmarks --store --scale``): memories, a
deterministic clustered embedding, the exact nearest neighbours, the places on the
pgvector server, how each store is opened and the timed calls.

Memories: item ``i`` lives in ``("memories", "u<i % users>")`` with 100 memories a user
(the users grow with the store, a user's memories do not); its value holds ``text`` (the
embedded field, naming ``i`` and its cluster), ``kind``, ``importance`` and ``score`` (a
fraction in 1/10,000 steps, spread uniformly, for the range filters). The embedding of
item ``i`` is its cluster's centre plus seeded noise, ``DIMS`` dims, unit length; queries
are other points near the centres. No model, no network: the same text always gives the
same vector, so every store holds the same vectors and :func:`exact_top` (NumPy, all
items) is the ground truth of recall@10.

Stores, per place: ``ours`` is ``SQLAlchemyStore`` (pgvector server: the shipping
``ann_index_config`` ``{"kind": "hnsw"}``); ``ours_flat`` is a second
``SQLAlchemyStore`` on the same pgvector database with ``{"kind": "flat"}``, which scores
every vector (exact); ``official`` is ``SqliteStore`` (a file) or ``PostgresStore``
(pgvector server, its own database, its HNSW index). Only public store methods are
called, so what main's store does is what is measured.
"""

from __future__ import annotations

import os
import re
import sqlite3
import statistics
import sys
import time
import uuid
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache, partial
from typing import Any, Literal

import numpy as np
from langgraph.store.base import BaseStore, PutOp
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from .backends import Store as Place
from .storework import same_durability

__all__ = [
    "DIMS",
    "PER_USER",
    "QUERIES",
    "RANGE_ALL",
    "RANGE_NS",
    "PgvectorServer",
    "embed",
    "exact_top",
    "expected_range",
    "fill",
    "index_walk",
    "memory",
    "namespace",
    "op_calls",
    "open_store",
    "sqlite_vec_missing",
    "users",
]

DIMS = 32
CLUSTERS = 64
#: Noise a coordinate around the cluster's centre (unit length): the noise's length is
#: about 0.68, so clusters overlap and the nearest ten are not trivially one cluster's.
SIGMA = 0.12
PER_USER = 100
NS = "memories"
#: The range filters: within one user (about 10 of its 100 memories match) and across
#: every user (1 memory in 100 matches).
RANGE_NS = 0.9
RANGE_ALL = 0.99
#: The fixed query set of vector search and recall@10.
QUERIES = tuple(f"q{j} what did the user say about this" for j in range(20))
KINDS = ("fact", "fact", "event", "instruction", "preference")
_CHUNK = 10_000
_WORDS = [
    "user",
    "said",
    "prefers",
    "remember",
    "later",
    "plans",
    "morning",
    "trip",
    "budget",
    "music",
    "garden",
]


def users(size: int) -> int:
    """User namespaces of a store of ``size`` memories."""
    return max(1, size // PER_USER)


def namespace(i: int, size: int) -> tuple[str, ...]:
    return (NS, f"u{i % users(size)}")


def key(i: int) -> str:
    return f"m-{i:07d}"


def score(i: int) -> float:
    """A fraction in 1/10,000 steps (0.0001-0.9999): its JSON text is a plain decimal."""
    return (zlib.crc32(b"s%d" % i) % 9_999 + 1) / 10_000


def cluster(i: int) -> int:
    return zlib.crc32(b"c%d" % i) % CLUSTERS


def memory(i: int) -> dict[str, Any]:
    """Memory ``i`` (~150 bytes of JSON); ``text`` starts with ``m<i>``, what
    :func:`embed` reads."""
    words = " ".join(_WORDS[(i + k * 3) % len(_WORDS)] for k in range(6))
    return {
        "text": f"m{i} c{cluster(i)} {words}",
        "kind": KINDS[i % len(KINDS)],
        "importance": i % 5 + 1,
        "score": score(i),
        "turn": i,
    }


@lru_cache(maxsize=1)
def _centres() -> Any:
    c = np.random.default_rng(7).standard_normal((CLUSTERS, DIMS))
    return c / np.linalg.norm(c, axis=1, keepdims=True)


@lru_cache(maxsize=256)
def _noise(chunk: int, stream: int = 0) -> Any:
    return np.random.default_rng([11, stream, chunk]).standard_normal((_CHUNK, DIMS)) * SIGMA


def _vectors(ids: Any, clusters: Any, stream: int = 0) -> Any:
    """Unit vectors of items (``stream`` 0) or queries (1) ``ids`` around ``clusters``."""
    ids = np.asarray(ids, dtype=np.int64)
    out = _centres()[np.asarray(clusters, dtype=np.int64)].copy()
    chunks = ids // _CHUNK
    for chunk in np.unique(chunks):
        mask = chunks == chunk
        out[mask] += _noise(int(chunk), stream)[ids[mask] % _CHUNK]
    return out / np.linalg.norm(out, axis=1, keepdims=True)


def _query_cluster(j: int) -> int:
    return (j * 7) % CLUSTERS


def embed(texts: list[str]) -> list[list[float]]:
    """The embedding of the run (``embed`` of every store's index config): ``m<i> ...``
    is item ``i``'s vector, ``q<j> ...`` query ``j``'s; any other text a seeded point."""
    out: list[Any] = [None] * len(texts)
    items: dict[int, int] = {}
    for n, t in enumerate(texts):
        head = t.split(" ", 1)[0]
        if head[:1] == "m" and head[1:].isdigit():
            items[n] = int(head[1:])
        elif head[:1] == "q" and head[1:].isdigit():
            j = int(head[1:])
            out[n] = _vectors([j], [_query_cluster(j)], stream=1)[0]
        else:
            r = np.random.default_rng(zlib.crc32(t.encode())).standard_normal(DIMS)
            out[n] = r / np.linalg.norm(r)
    if items:
        ids = list(items.values())
        for n, v in zip(items, _vectors(ids, [cluster(i) for i in ids]), strict=True):
            out[n] = v
    return [v.tolist() for v in out]


def exact_top(size: int, k: int = 10) -> list[list[str]]:
    """Per query of :data:`QUERIES`, the keys of the ``k`` items of highest cosine
    similarity among the ``size`` memories (NumPy, float64): the recall ground truth."""
    vectors = _vectors(np.arange(size), [cluster(i) for i in range(size)])
    js = range(len(QUERIES))
    queries = _vectors(np.array(list(js)), [_query_cluster(j) for j in js], stream=1)
    sims = queries @ vectors.T
    top = np.argsort(-sims, axis=1, kind="stable")[:, :k]
    return [[key(int(i)) for i in row] for row in top]


def expected_range(size: int, user: int | None, bound: float) -> int:
    """How many results ``search(..., filter={"score": {"$gt": bound}}, limit=10)`` must
    give: under user ``user``'s namespace, or (None) across every user."""
    ids = range(size) if user is None else range(user % users(size), size, users(size))
    return min(10, sum(score(i) > bound for i in ids))


def sqlite_vec_missing() -> str | None:
    """Why ``SqliteStore`` cannot index vectors in this Python, or None."""
    if not hasattr(sqlite3.Connection, "enable_load_extension"):
        return (
            f"this Python's sqlite3 ({os.path.realpath(sys.executable)}) has no "
            "enable_load_extension, and SqliteStore's vector index needs sqlite-vec"
        )
    return None


# -- places on the pgvector server ------------------------------------------------------------


class PgvectorServer:
    """One database per store on the pgvector server (``LGSA_PGVECTOR_URL``), created on
    demand and dropped by :meth:`close`. Its places say ``dialect="postgres"`` (the
    harness's ANALYZE and storage queries are PostgreSQL's)."""

    def __init__(self, url: str) -> None:
        self.base = make_url(url).set(drivername="postgresql+psycopg")
        self.admin = create_engine(self.base, isolation_level="AUTOCOMMIT")
        self.run_id = uuid.uuid4().hex[:8]
        self.databases: list[str] = []

    def version(self) -> str:
        with self.admin.connect() as conn:
            server = conn.execute(text("SHOW server_version")).scalar()
            ext = conn.execute(
                text("SELECT default_version FROM pg_available_extensions WHERE name = 'vector'")
            ).scalar()
        return f"{server}, pgvector {ext}"

    def new_store(self) -> Place:
        name = f"lgsa_sscale_{self.run_id}_{len(self.databases)}"
        with self.admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
        self.databases.append(name)
        url = self.base.set(database=name)
        native = url.set(drivername="postgresql").render_as_string(hide_password=False)
        return Place("postgres", name, url.render_as_string(hide_password=False), native)

    def close(self) -> None:
        with self.admin.connect() as conn:
            for name in self.databases:
                conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        self.admin.dispose()


# -- opening stores ---------------------------------------------------------------------------


def index_config(kind: str | None) -> dict[str, Any]:
    """The index of every vector store: ``DIMS`` dims, the ``text`` field, cosine;
    ``kind``: the ``ann_index_config`` kind (pgvector server), None elsewhere."""
    config: dict[str, Any] = {"dims": DIMS, "embed": embed, "fields": ["text"]}
    if kind:
        config["ann_index_config"] = {"kind": kind}
    return config


@contextmanager
def open_store(impl: str, place: Place, index: dict[str, Any] | None) -> Iterator[BaseStore]:
    """A set-up store of ``impl`` ("ours" or "official") on ``place``."""
    if impl == "ours":
        from langgraph.store.sqlalchemy import SQLAlchemyStore

        store = SQLAlchemyStore.from_conn_string(place.url, index=index)  # type: ignore[arg-type]
        try:
            store.setup()
            yield store
        finally:
            store.close()
    elif place.url.startswith("sqlite"):
        from langgraph.store.sqlite import SqliteStore

        with SqliteStore.from_conn_string(place.native, index=index) as sqlite_store:  # type: ignore[arg-type]
            same_durability(sqlite_store)
            sqlite_store.setup()
            yield sqlite_store
    else:
        from langgraph.store.postgres import PostgresStore

        with PostgresStore.from_conn_string(place.native, index=index) as pg_store:  # type: ignore[arg-type]
            pg_store.setup()
            yield pg_store


def fill(store: BaseStore, size: int, vectors: bool, batch: int = 500) -> float:
    """Put memories 0..``size``-1 through the store's own ``batch`` (``batch`` puts a
    call; ``vectors``: each embeds ``text``); items a second."""
    index: list[str] | Literal[False] = ["text"] if vectors else False
    t = time.perf_counter()
    for start in range(0, size, batch):
        ops = [
            PutOp(namespace(i, size), key(i), memory(i), index=index)
            for i in range(start, min(size, start + batch))
        ]
        store.batch(ops)
    return size / (time.perf_counter() - t)


# -- timed calls ------------------------------------------------------------------------------


@dataclass
class Writes:
    """Fresh keys for the put operations of one store (never read back by the reads:
    namespace ``("scratch", "p<n>")``, no embedding)."""

    n: int = 0

    def next(self) -> tuple[tuple[str, ...], str, dict[str, Any]]:
        self.n += 1
        return ("scratch", f"p{self.n % 100}"), f"w-{self.n:07d}", memory(self.n)


def _put(store: BaseStore, w: Writes) -> None:
    ns, k, value = w.next()
    store.put(ns, k, value, index=False)


def _put_batch(store: BaseStore, w: Writes) -> None:
    ops = []
    for _ in range(500):
        ns, k, value = w.next()
        ops.append(PutOp(ns, k, value, index=False))
    store.batch(ops)


def _get(store: BaseStore, size: int, i: int) -> None:
    item = store.get(namespace(i, size), key(i))
    if item is None or item.value != memory(i):
        raise AssertionError(f"get {key(i)} gave {item}")


def _range(store: BaseStore, prefix: tuple[str, ...], bound: float, expect: int) -> None:
    found = store.search(prefix, filter={"score": {"$gt": bound}}, limit=10)
    if len(found) != expect or any(
        it.namespace[: len(prefix)] != prefix or not it.value["score"] > bound for it in found
    ):
        raise AssertionError(f"range {prefix} > {bound}: {len(found)} items, {expect} expected")


def _list_namespaces(store: BaseStore, expect: int) -> None:
    found = store.list_namespaces(prefix=(NS,), limit=100)
    if len(found) != expect:
        raise AssertionError(f"list_namespaces gave {len(found)}, {expect} expected")


def vector_keys(store: BaseStore, q: str) -> list[str]:
    """``search(("memories",), query=q, limit=10)``: the keys, checked to be 10 and
    ordered by descending score."""
    found = store.search((NS,), query=q, limit=10)
    scores = [it.score for it in found]
    if len(found) != 10 or None in scores or scores != sorted(scores, reverse=True):  # type: ignore[type-var]
        raise AssertionError(f"vector search {q!r}: {scores}")
    return [it.key for it in found]


def op_calls(
    op: str, store: BaseStore, size: int, calls: int, round_: int, writes: Writes
) -> list[Callable[[], Any]]:
    """``calls`` calls of ``op`` on ``store`` for round ``round_`` (each round reads other
    keys, users and queries); public store methods only."""
    r = round_ * 1_000_003
    if op == "put":
        return [partial(_put, store, writes)] * calls
    if op == "put_batch":
        return [partial(_put_batch, store, writes)] * calls
    if op == "get":
        return [partial(_get, store, size, (r + k * 7_919) % size) for k in range(calls)]
    if op == "search_range_ns":
        out: list[Callable[[], Any]] = []
        for k in range(calls):
            user = (r + k * 31) % users(size)
            expect = expected_range(size, user, RANGE_NS)
            out.append(partial(_range, store, (NS, f"u{user}"), RANGE_NS, expect))
        return out
    if op == "search_range":
        expect = expected_range(size, None, RANGE_ALL)
        return [partial(_range, store, (NS,), RANGE_ALL, expect)] * calls
    if op == "list_namespaces":
        return [partial(_list_namespaces, store, min(100, users(size)))] * calls
    if op in ("vector_exact", "vector_ann"):
        return [
            partial(vector_keys, store, QUERIES[(round_ + k) % len(QUERIES)]) for k in range(calls)
        ]
    raise ValueError(op)


# -- the index walk on the server ---------------------------------------------------------

#: Each store's HNSW search as plain SQL on its own vectors table (``:q``: the query in
#: pgvector's text form): the walk its index makes for ``LIMIT 10``, apart from the store.
_WALKS = {
    "ours": (  # DIMS: this module's integer constant
        f"SELECT key FROM lgsa_store_vectors WHERE vector_dims(vec) = {DIMS} "  # noqa: S608
        f"ORDER BY vec::vector({DIMS}) <=> CAST(:q AS vector({DIMS})) LIMIT 10"
    ),
    "official": "SELECT key FROM store_vectors ORDER BY embedding <=> CAST(:q AS vector) LIMIT 10",
}


def index_walk(place: Place, impl: str, ef_search: int) -> dict[str, float]:
    """The HNSW walk of each query of :data:`QUERIES` on the server, by ``EXPLAIN
    (ANALYZE, BUFFERS)`` of :data:`_WALKS`'s statement at ``ef_search``: the medians of
    the buffers the index scan read (load-independent) and of the execution time (ms)."""
    engine = create_engine(place.url, isolation_level="AUTOCOMMIT")
    pages: list[int] = []
    times: list[float] = []
    try:
        with engine.connect() as conn:
            conn.execute(text(f"SET hnsw.ef_search = {int(ef_search)}"))
            conn.execute(text("SET enable_seqscan = off"))  # the index, at any size
            for vector in embed(list(QUERIES)):
                q = "[" + ",".join(f"{v:.8f}" for v in vector) + "]"
                plan = "\n".join(
                    r[0]
                    for r in conn.execute(
                        text("EXPLAIN (ANALYZE, BUFFERS) " + _WALKS[impl]), {"q": q}
                    )
                )
                scan = plan[plan.index("Index Scan") :]
                found = re.search(r"shared hit=(\d+)(?: read=(\d+))?", scan)
                timed = re.search(r"Execution Time: ([0-9.]+) ms", plan)
                if found is None or timed is None:
                    raise AssertionError(f"no index walk in the plan:\n{plan}")
                pages.append(int(found[1]) + int(found[2] or 0))
                times.append(float(timed[1]))
    finally:
        engine.dispose()
    return {"pages": statistics.median(pages), "server_ms": statistics.median(times)}
