"""The long-term memory store workloads: the data, the fake embedding, how each
store is opened, and the timed bodies.

Stores: ``ours`` is ``SQLAlchemyStore``; ``official`` is ``SqliteStore`` on SQLite (a
file) and ``PostgresStore`` on PostgreSQL (one psycopg connection, autocommit,
``dict_row``: its ``from_conn_string``). MariaDB has no official store. Every body warms
up first (untimed), times its loop with ``time.perf_counter``, and checks what it read
(untimed) so that a broken store cannot look fast.
"""

from __future__ import annotations

import math
import random
import time
import zlib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from langgraph.store.base import BaseStore, PutOp

from .backends import Store as Place

WARMUP = 10
DIMS = 128
USERS_NS = "memories"
#: The kinds of memory; ``preference`` is one in ten (about 10 per user of 100 memories).
KINDS = ("fact",) * 4 + ("event",) * 3 + ("instruction", "summary", "preference")
FILTER = {"kind": "preference"}
OFFICIAL_STORES = {"sqlite": "SqliteStore", "postgres": "PostgresStore"}
#: Tables whose size is a store's storage (not its migration tables).
STORE_TABLES = {
    "ours": ("lgsa_store_items", "lgsa_store_vectors"),
    "official": ("store", "store_vectors"),
}

_TOPICS = (
    "coffee tea breakfast morning espresso",
    "hiking mountains weekend trail boots",
    "python code review tests deadline",
    "flight hotel booking paris travel",
    "piano lessons music practice evening",
    "vegetarian dinner recipes cooking pasta",
    "running marathon training knee injury",
    "budget savings taxes invoice accountant",
    "daughter school birthday party gift",
    "garden tomatoes watering spring roses",
)
_FILLER = (
    "the",
    "user",
    "said",
    "that",
    "they",
    "usually",
    "prefer",
    "to",
    "mention",
    "it",
    "when",
    "we",
    "talk",
    "about",
    "plans",
    "and",
    "asked",
    "the",
    "assistant",
    "to",
    "remember",
    "this",
    "for",
    "later",
    "conversations",
)


def namespace(i: int, users: int) -> tuple[str, ...]:
    """Memory ``i`` belongs to user ``u<i % users>``."""
    return (USERS_NS, f"u{i % users}")


def memory(i: int) -> dict[str, Any]:
    """A realistic memory document (~300 bytes of JSON): kind, text, importance, tags."""
    rng = random.Random(i)
    topic = _TOPICS[i % len(_TOPICS)].split()
    words = rng.sample(topic, 3) + rng.sample(_FILLER, 12)
    rng.shuffle(words)
    return {
        "kind": KINDS[zlib.crc32(b"%d" % i) % len(KINDS)],
        "text": " ".join(words),
        "importance": i % 5 + 1,
        "source": "chat",
        "tags": topic[:2],
        "turn": i,
    }


def matching(items: int, users: int, user: int, filter: dict[str, Any]) -> int:
    """How many memories of user ``user`` match ``filter`` (equality of each key)."""
    return sum(
        all(memory(i).get(k) == v for k, v in filter.items())
        for i in range(user % users, items, users)
    )


def embed(texts: Sequence[str]) -> list[list[float]]:
    """A deterministic fake embedding: every word adds +-1 to 4 of the ``DIMS``
    coordinates chosen by its CRC32; unit length. Texts sharing words are close."""
    out = []
    for text in texts:
        v = [0.0] * DIMS
        for word in text.lower().split():
            h = zlib.crc32(word.encode())
            for k in range(4):
                v[(h >> (7 * k)) % DIMS] += 1.0 if (h >> (28 + k)) & 1 else -1.0
        norm = math.sqrt(sum(x * x for x in v)) or 1.0
        out.append([x / norm for x in v])
    return out


def index_config() -> dict[str, Any]:
    """The same ``index`` for every store: DIMS dims, the ``text`` field."""
    return {"dims": DIMS, "embed": embed, "fields": ["text"]}


QUERIES = (
    "what does the user drink in the morning",
    "weekend hiking plans",
    "code review deadline",
    "dinner recipes",
)


# -- opening stores -----------------------------------------------------------------------------


def same_durability(sqlite_store: Any) -> None:
    """Put ``SqliteStore``'s connection at our store's durability: WAL journal,
    ``synchronous = NORMAL`` (a commit does not wait for fsync; what ours ships). As it
    ships it keeps SQLite's defaults (rollback journal, ``synchronous = FULL``: every commit
    waits for fsync), which would time its disk, not its code, against ours."""
    sqlite_store.conn.execute("PRAGMA journal_mode = WAL")
    sqlite_store.conn.execute("PRAGMA synchronous = NORMAL")


@contextmanager
def open_store(impl: str, place: Place, *, vectors: bool = False) -> Iterator[BaseStore]:
    """A set-up store on ``place``; ``vectors``: with :func:`index_config`."""
    index: Any = index_config() if vectors else None
    if impl == "ours":
        from langgraph.store.sqlalchemy import SQLAlchemyStore

        store = SQLAlchemyStore.from_conn_string(place.url, index=index)
        try:
            store.setup()
            yield store
        finally:
            store.close()
    elif place.dialect == "sqlite":
        from langgraph.store.sqlite import SqliteStore

        with SqliteStore.from_conn_string(place.native, index=index) as sqlite_store:
            same_durability(sqlite_store)
            sqlite_store.setup()
            yield sqlite_store
    else:
        from langgraph.store.postgres import PostgresStore

        with PostgresStore.from_conn_string(place.native, index=index) as pg_store:
            pg_store.setup()
            yield pg_store


def fill(
    store: BaseStore, items: int, users: int, *, vectors: bool = False, batch: int = 500
) -> float:
    """Put ``items`` memories through the store's own ``batch`` (``batch`` puts a call),
    oldest first; returns items a second (embedding included with ``vectors``).

    With ``vectors`` each put names its field (``index=["text"]``): ``SqliteStore``
    3.1 embeds the whole value (field ``"$"``) for a put that leaves ``index`` to the
    store's config, whatever its ``fields`` say."""
    index = ["text"] if vectors else None
    batches = [
        [
            PutOp(namespace(i, users), f"m-{i:06d}", memory(i), index=index)
            for i in range(start, min(items, start + batch))
        ]
        for start in range(0, items, batch)
    ]  # built before the clock starts: only the store is timed
    t = time.perf_counter()
    for ops in batches:
        store.batch(ops)
    return items / (time.perf_counter() - t)


# -- timed bodies -------------------------------------------------------------------------------


def put(store: BaseStore, n: int, users: int) -> float:
    """Items a second: ``n`` single ``put`` calls, memories spread over ``users`` users."""
    for i in range(WARMUP):
        store.put((USERS_NS, "warmup"), f"w-{i}", memory(i))
    puts = [(namespace(i, users), f"new-{i:06d}", memory(i)) for i in range(n)]
    t = time.perf_counter()
    for ns, key, value in puts:
        store.put(ns, key, value)
    rate = n / (time.perf_counter() - t)
    last = store.get(namespace(n - 1, users), f"new-{n - 1:06d}")
    assert last is not None and last.value == memory(n - 1), last
    return rate


def get(store: BaseStore, n: int, items: int, users: int) -> float:
    """Milliseconds a call: ``n`` ``get`` of existing memories spread over the store."""
    picks = [(k * 7919) % items for k in range(n)]
    for i in picks[:WARMUP]:
        assert store.get(namespace(i, users), f"m-{i:06d}") is not None
    t = time.perf_counter()
    found = [store.get(namespace(i, users), f"m-{i:06d}") for i in picks]
    ms = (time.perf_counter() - t) * 1000 / n
    assert all(f is not None and f.value == memory(i) for f, i in zip(found, picks, strict=True))
    return ms


def search(
    store: BaseStore,
    calls: int,
    prefix: tuple[str, ...],
    expect: int,
    filter: dict[str, Any] | None = None,
) -> float:
    """Milliseconds a call: ``search(prefix, filter=filter, limit=10)``, ``calls`` times;
    each must return ``expect`` items matching the filter."""
    for _ in range(3):
        store.search(prefix, filter=filter, limit=10)
    t = time.perf_counter()
    for _ in range(calls):
        found = store.search(prefix, filter=filter, limit=10)
    ms = (time.perf_counter() - t) * 1000 / calls
    assert len(found) == expect, (len(found), expect)
    for item in found:
        assert item.namespace[: len(prefix)] == prefix, item
        assert all(item.value.get(k) == v for k, v in (filter or {}).items()), item
    return ms


def list_namespaces(store: BaseStore, calls: int, expect: int) -> float:
    """Milliseconds a call: ``list_namespaces(prefix=("memories",), limit=100)``."""
    for _ in range(3):
        store.list_namespaces(prefix=(USERS_NS,), limit=100)
    t = time.perf_counter()
    for _ in range(calls):
        found = store.list_namespaces(prefix=(USERS_NS,), limit=100)
    ms = (time.perf_counter() - t) * 1000 / calls
    assert len(found) == expect and all(ns[0] == USERS_NS for ns in found), found[:3]
    return ms


def vector_search(store: BaseStore, calls: int) -> float:
    """Milliseconds a call: ``search(("memories",), query=q, limit=10)`` over every
    memory, ``q`` one of :data:`QUERIES` in turn; results by descending score."""
    for q in QUERIES:
        store.search((USERS_NS,), query=q, limit=10)
    t = time.perf_counter()
    results = [
        store.search((USERS_NS,), query=QUERIES[c % len(QUERIES)], limit=10) for c in range(calls)
    ]
    ms = (time.perf_counter() - t) * 1000 / calls
    for found in results:
        scores = [item.score for item in found]
        assert len(found) == 10 and None not in scores, scores
        assert scores == sorted(scores, reverse=True), scores  # type: ignore[type-var]
    return ms


def top_scores(store: BaseStore) -> list[float]:
    """The score of the best match of each query (untimed: compared across stores; the
    keys may differ where memories tie)."""
    return [store.search((USERS_NS,), query=q, limit=1)[0].score or 0.0 for q in QUERIES]
