"""What the official test bodies call, backed by ``SQLAlchemyStore``: our fixtures.

The bodies build their stores with ``SqliteStore.from_conn_string(...)``,
``AsyncSqliteStore.from_conn_string(...)`` or ``InMemoryStore(...)``; the stand-ins of
the same names here give each call a new, empty ``SQLAlchemyStore`` on the test's
backend (``conftest.py``'s ``official_stores``), with the call's ``index`` and ``ttl``.
The connection string is the official store's (``":memory:"``, a temporary file) and is
not used. Every store is closed after its test.

:class:`CharacterEmbeddings`, :class:`_FixedVectorEmbeddings` and
``_EXPECTED_RANKINGS`` are copied from ``langchain-ai/langgraph``,
``libs/checkpoint-sqlite/tests/test_store.py`` at commit
``02340643ccafc5f3e6062dd8a58b132a5536bf7f`` (MIT License, Copyright (c) 2024
LangChain, Inc.; the full text is in ``LICENSE`` beside this file); the other official
test files import the same ``CharacterEmbeddings`` from their ``embed_test_utils.py``.
"""

from __future__ import annotations

import math
import random
from collections import Counter, defaultdict
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import orjson
from langchain_core.embeddings import Embeddings

from langgraph.store.sqlalchemy import SQLAlchemyStore

#: The store makers of the running test (``conftest.py`` pushes and pops one).
MAKERS: list[Callable[..., SQLAlchemyStore]] = []


def new_store(*, index: Any = None, ttl: Any = None) -> SQLAlchemyStore:
    """A new, empty, set-up store on the running test's backend."""
    if not MAKERS:
        raise RuntimeError("no official store fixture is active (tests/store/official only)")
    return MAKERS[-1](index=index, ttl=ttl)


class SqliteStore:
    """Stands in for ``langgraph.store.sqlite.SqliteStore`` in the bodies."""

    @staticmethod
    @contextmanager
    def from_conn_string(
        conn_string: str, *, index: Any = None, ttl: Any = None
    ) -> Iterator[SQLAlchemyStore]:
        yield new_store(index=index, ttl=ttl)  # closed by the fixture, after the test


class AsyncSqliteStore:
    """Stands in for ``langgraph.store.sqlite.AsyncSqliteStore`` in the bodies."""

    @staticmethod
    @asynccontextmanager
    async def from_conn_string(
        conn_string: str, *, index: Any = None, ttl: Any = None
    ) -> AsyncIterator[SQLAlchemyStore]:
        yield new_store(index=index, ttl=ttl)


def InMemoryStore(*, index: Any = None, ttl: Any = None) -> SQLAlchemyStore:
    """Stands in for ``langgraph.store.memory.InMemoryStore(...)`` in the bodies."""
    return new_store(index=index, ttl=ttl)


# -- copied from the official tests (MIT) ----------------------------------------------


# Local embeddings implementation for testing vector search
class CharacterEmbeddings(Embeddings):
    """Simple character-frequency based embeddings using random projections."""

    def __init__(self, dims: int = 50, seed: int = 42):
        """Initialize with embedding dimensions and random seed."""
        self._rng = random.Random(seed)
        self.dims = dims
        # Create projection vector for each character lazily
        self._char_projections: dict[str, list[float]] = defaultdict(
            lambda: [self._rng.gauss(0, 1 / math.sqrt(self.dims)) for _ in range(self.dims)]
        )

    def _embed_one(self, text: str) -> list[float]:
        """Embed a single text."""
        counts = Counter(text)
        total = sum(counts.values())

        if total == 0:
            return [0.0] * self.dims

        embedding = [0.0] * self.dims
        for char, count in counts.items():
            weight = count / total
            char_proj = self._char_projections[char]
            for i, proj in enumerate(char_proj):
                embedding[i] += weight * proj

        norm = math.sqrt(sum(x * x for x in embedding))
        if norm > 0:
            embedding = [x / norm for x in embedding]

        return embedding

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed a list of documents."""
        return [self._embed_one(text) for text in texts]

    def embed_query(self, text: str) -> list[float]:
        """Embed a query string."""
        return self._embed_one(text)

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, CharacterEmbeddings) and self.dims == other.dims


class _FixedVectorEmbeddings(Embeddings):
    """Embeddings that map known texts to hand-picked vectors."""

    dims = 3
    vectors = {
        "a": [1.0, 0.0, 0.0],
        "b": [2.0, 0.1, 0.0],
        "c": [0.0, 0.0, 1.0],
    }

    def _embed_one(self, text: str) -> list[float]:
        # Stored values arrive as the JSON-encoded item; queries arrive as-is.
        key = orjson.loads(text)["text"] if text.startswith("{") else text
        return list(self.vectors[key])

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._embed_one(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._embed_one(text)


# Expected (key, score) ranking for a query of "a" under each distance type.
# Higher scores must always rank first, matching PostgresStore semantics.
_EXPECTED_RANKINGS = {
    "cosine": [("a", 1.0), ("b", 2.0 / math.sqrt(4.01)), ("c", 0.0)],
    "l2": [("a", 0.0), ("b", -math.sqrt(1.01)), ("c", -math.sqrt(2.0))],
    "inner_product": [("b", 2.0), ("a", 1.0), ("c", 0.0)],
}


# -- our stand-ins for the official tests' SQL helpers -------------------------------


def execute(store: SQLAlchemyStore, statement: Any) -> Any:
    """Run a Core statement on the store's tables (its schema) and commit; the rows of a
    SELECT, as a list."""
    with store.engine.connect() as conn:
        if store.schema:
            conn = conn.execution_options(schema_translate_map={None: store.schema})
        result = conn.execute(statement)
        rows = list(result) if result.returns_rows else None
        conn.commit()
        return rows
