"""Backends for every test: one test body, many databases, sync and async.

The ``saver`` fixture is parametrised over SQLite file, SQLite ``:memory:``, PostgreSQL
and MariaDB, each through the sync and the async methods (the ``door`` fixture). Each
test gets empty tables of its own: a new SQLite file in ``tmp_path``, a new in-memory
database, a new PostgreSQL schema inside a database created for this test run and
dropped at its end, or a new MariaDB database dropped after the test, so nothing leaks
between tests or runs. Tests that need whole databases of their own call
``fresh_databases``. Every database is made by :mod:`tests.provision` (its docstring
names the environment variables: server URLs and ``LGSA_TEST_BACKENDS``).
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import ExitStack
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from langchain_core.embeddings import Embeddings
from sqlalchemy import create_engine
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from langgraph.checkpoint.sqlalchemy import SQLAlchemySaver
from langgraph.checkpoint.sqlalchemy._engine.engines import resolve_urls
from langgraph.store.sqlalchemy import SQLAlchemyStore

from .doors import Door, twins
from .provision import BACKENDS, MARIADB_ADMIN_URL, fresh_database, new_name, new_saver_args


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """URL of a PostgreSQL database created for this test run (dropped at the end)."""
    with fresh_database("postgres", name=new_name(f"lgsa_test_{os.getpid()}")) as url:
        yield url


@pytest.fixture
def fresh_databases(tmp_path: Path) -> Iterator[Callable[..., str]]:
    """Call it as ``fresh_databases(backend, **options)`` for the URL of a new, empty
    database of this test (options as for :func:`tests.provision.fresh_database`); all
    are dropped after the test."""
    with ExitStack() as stack:
        yield lambda backend, **options: stack.enter_context(
            fresh_database(backend, tmp_path, **options)
        )


@pytest.fixture
def pg_database(fresh_databases: Callable[..., str]) -> Callable[[], str]:
    """Call it for the URL of a new, empty PostgreSQL database (dropped after the test)."""
    return lambda: fresh_databases("postgres", prefix="lgsa_tr")


@pytest.fixture
def mariadb_database(fresh_databases: Callable[..., str]) -> Callable[[], str]:
    """Call it for the URL of a new MariaDB database (dropped after the test)."""
    return lambda: fresh_databases("mariadb", prefix="lgsa_tr")


@pytest.fixture(scope="session")
def mariadb_url() -> Iterator[str]:
    """URL of the MariaDB server; each test gets its own database (the saver's
    ``schema``), dropped after the test. The server's settings are its own: the suite
    changes none (large-value tests read ``max_allowed_packet`` and size to it).
    Skipped when ``LGSA_TEST_BACKENDS`` leaves MariaDB out."""
    if "mariadb" not in BACKENDS:
        pytest.skip("mariadb not in LGSA_TEST_BACKENDS")
    yield MARIADB_ADMIN_URL


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """Name of the database backend of this test."""
    return str(request.param)


@pytest.fixture
async def saver_factory(
    backend: str, request: pytest.FixtureRequest, tmp_path: Any
) -> AsyncIterator[Any]:
    """Call it to get a new set-up saver on the test's backend (its own empty store).

    ``factory(shared=True)`` returns a second saver on the same store as the first one
    (a second process in spirit: own engines, same database; ``from_conn_string`` would
    share the first one's engines).
    """
    made: list[SQLAlchemySaver] = []
    first_args: dict[str, Any] = {}
    own: list[Any] = []  # engines made here for second savers, disposed at the end

    def factory(*, shared: bool = False, **kwargs: Any) -> SQLAlchemySaver:
        nonlocal first_args
        if shared and made:
            args = dict(first_args)
            if backend == "sqlite-memory":
                # The same in-memory database is reachable through the first saver's
                # engines only.
                first = made[0]
                s = SQLAlchemySaver(first.engine, first.async_engine, schema=first.schema, **kwargs)
                made.append(s)
                return s
            urls = resolve_urls(args["conn_string"])
            engines = (create_engine(urls.sync), create_async_engine(urls.async_))
            own.extend(engines)
            s = SQLAlchemySaver(*engines, schema=args.get("schema"), **kwargs)
        else:
            args = new_saver_args(backend, request, tmp_path)
            if not made:
                first_args = args
            s = SQLAlchemySaver.from_conn_string(**args, **kwargs)
        s.setup()
        made.append(s)
        return s

    yield factory
    for s in reversed(made):
        await s.aclose()  # in the test's event loop, which owns the async connections
    for engine in own:
        await engine.dispose() if isinstance(engine, AsyncEngine) else engine.dispose()


@pytest.fixture
def saver(saver_factory: Any, request: pytest.FixtureRequest) -> SQLAlchemySaver:
    """A set-up saver with empty tables on the test's backend.

    ``@pytest.mark.saver_kwargs(...)`` on a test or module passes saver arguments (for
    example ``inline_limit=0``: every channel value in the blobs table).
    """
    marker = request.node.get_closest_marker("saver_kwargs")
    return saver_factory(**(marker.kwargs if marker else {}))  # type: ignore[no-any-return]


@pytest.fixture(params=("sync", "async"))
def mode(request: pytest.FixtureRequest) -> str:
    """Which door of the saver the test goes through: its sync or its async methods."""
    return str(request.param)


@pytest.fixture
def door(saver: SQLAlchemySaver, mode: str) -> Door:
    """The saver seen through its sync or async methods, with one awaitable API."""
    return Door(saver, mode)


# -- the long-term memory store --------------------------------------------------------


class StoreDoor:
    """The store through one mode: ``door.put(...)`` is ``store.put(...)`` ("sync") or
    ``await store.aput(...)`` ("async"), awaitable either way, for every method pair of
    the store's class (:func:`tests.doors.twins`: ``get``, ``put``, ``search``,
    ``list_namespaces``, ``batch``, ``sweep_ttl``, ...), none listed by hand."""

    def __init__(self, store: Any, mode: str) -> None:
        assert mode in ("sync", "async")
        self.store = store
        self.mode = mode

    @property
    def is_async(self) -> bool:
        return self.mode == "async"

    def __getattr__(self, name: str) -> Callable[..., Awaitable[Any]]:
        """``name`` of the store's method pairs, as an awaitable through this door.

        Raises:
            AttributeError: the store has no ``name``/``aname`` pair.
        """
        store = self.__dict__.get("store")
        if store is None or name not in twins(type(store)):
            raise AttributeError(name)

        async def method(*args: Any, **kwargs: Any) -> Any:
            if self.is_async:
                return await getattr(store, "a" + name)(*args, **kwargs)
            return getattr(store, name)(*args, **kwargs)

        method.__name__ = name
        return method


class HashEmbeddings(Embeddings):
    """A deterministic bag-of-words embedding (no model): each lower-cased word adds 1 to
    the dimension its SHA-256 picks, so texts sharing words are close."""

    def __init__(self, dims: int = 16) -> None:
        self.dims = dims
        self.calls: list[str] = []  # every text embedded, in order

    def _one(self, text: str) -> list[float]:
        self.calls.append(text)
        vector = [0.0] * self.dims
        for word in re.findall(r"\w+", text.lower()):
            digest = hashlib.sha256(word.encode()).digest()
            vector[int.from_bytes(digest[:4], "big") % self.dims] += 1
        return vector

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._one(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._one(text)


@pytest.fixture
async def store_factory(
    backend: str, request: pytest.FixtureRequest, tmp_path: Any
) -> AsyncIterator[Callable[..., SQLAlchemyStore]]:
    """Call it (``factory(index=..., ttl=..., clock=...)``) for a new set-up store on the
    test's backend, with empty tables of its own; every store made is closed (``aclose``,
    in the test's event loop) after the test."""
    made: list[SQLAlchemyStore] = []

    def factory(**kwargs: Any) -> SQLAlchemyStore:
        args = new_saver_args(backend, request, tmp_path)
        s = SQLAlchemyStore.from_conn_string(args.pop("conn_string"), **args, **kwargs)
        s.setup()
        made.append(s)
        return s

    yield factory
    for s in reversed(made):
        await s.aclose()


@pytest.fixture
def store(store_factory: Callable[..., SQLAlchemyStore]) -> SQLAlchemyStore:
    """A set-up store with empty tables on the test's backend (no index, no TTL)."""
    return store_factory()


@pytest.fixture
def store_door(store: SQLAlchemyStore, mode: str) -> StoreDoor:
    """The ``store`` fixture through its sync or async methods (the ``mode`` fixture)."""
    return StoreDoor(store, mode)


class Clock:
    """A clock the test moves: pass it as the store's ``clock=``; ``advance`` moves it."""

    def __init__(self, start: datetime | None = None) -> None:
        self.now = start or datetime(2026, 1, 1, 12, 0, tzinfo=timezone.utc)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> datetime:
        """Move forward by ``timedelta(**delta)``; returns the new time."""
        self.now += timedelta(**delta)
        return self.now


@pytest.fixture
def clock() -> Clock:
    """A :class:`Clock` at 2026-01-01 12:00 UTC, for the store's ``clock=``."""
    return Clock()
