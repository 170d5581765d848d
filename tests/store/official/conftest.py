"""Fixtures of the official store tests: every test on SQLite file, PostgreSQL and MariaDB.

The ``backend`` fixture is the suite's (``LGSA_TEST_BACKENDS``) without ``sqlite-memory``.
The stores of a test come from :func:`official_stores` (the stand-ins of
:mod:`.support` call it): the n-th store a test makes opens the n-th database of a pool
kept for the session, migrated once (a migration costs about a second on MariaDB and
the official tests make several hundred stores), and emptied before the store is handed
out: a new SQLite file is not needed to start empty, nor a new schema. Stores are closed
after their test, their TTL sweepers stopped, in the test's event loop. The bodies that
sleep for TTLs to run out run on a clock their sleeps move (:mod:`.simulated_time`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import delete

from langgraph.store.sqlalchemy import SQLAlchemyStore
from langgraph.store.sqlalchemy.tables import items, vectors

from ...provision import BACKENDS, drop_database, new_name
from . import support
from .simulated_time import SIMULATED, SimulatedTime

OFFICIAL_BACKENDS = tuple(b for b in BACKENDS if b != "sqlite-memory")


@pytest.fixture(params=OFFICIAL_BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """The database of the test: SQLite file, PostgreSQL or MariaDB."""
    return str(request.param)


class DatabasePool:
    """Databases of one session, migrated once, reused by test after test: the n-th
    store of a test on a backend opens the n-th one."""

    def __init__(self, request: pytest.FixtureRequest, folder: Path) -> None:
        self.request = request
        self.folder = folder
        self.slots: dict[tuple[str, int], dict[str, Any]] = {}
        self.dropped: list[str] = []  # MariaDB databases, dropped at the end

    def args(self, backend: str, n: int) -> dict[str, Any]:
        """``from_conn_string`` arguments of slot ``n`` of ``backend``."""
        found = self.slots.get((backend, n))
        if found is None:
            found = self.slots[(backend, n)] = self._new(backend, n)
        return dict(found)

    def _new(self, backend: str, n: int) -> dict[str, Any]:
        if backend == "sqlite-file":
            return {"conn_string": f"sqlite:///{self.folder / f'store{n}.sqlite'}"}
        if backend == "postgres":
            url = self.request.getfixturevalue("postgres_url")
            return {"conn_string": url, "schema": new_name("off").lower()}
        if backend == "mariadb":
            url = self.request.getfixturevalue("mariadb_url")
            name = new_name("lgsa_off")
            self.dropped.append(name)
            return {"conn_string": url, "schema": name}
        raise ValueError(backend)


@pytest.fixture(scope="session")
def database_pool(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[DatabasePool]:
    """The session's :class:`DatabasePool`."""
    pool = DatabasePool(request, tmp_path_factory.mktemp("official"))
    yield pool
    for name in pool.dropped:
        drop_database("mariadb", name)


def empty(store: SQLAlchemyStore) -> None:
    """Delete every item and vector of the store's tables."""
    support.execute(store, delete(vectors))
    support.execute(store, delete(items))


@pytest.fixture(autouse=True)
async def official_stores(
    backend: str,
    database_pool: DatabasePool,
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
) -> AsyncIterator[Callable[..., SQLAlchemyStore]]:
    """Makes the stores of the test (``support.new_store``): each new, set up, empty; in
    the modules of :data:`.SIMULATED`, on the clock that the body's sleeps move."""
    made: list[SQLAlchemyStore] = []
    simulated = None
    if request.module.__name__.rsplit(".", 1)[-1] in SIMULATED:
        simulated = SimulatedTime()
        for name, module in simulated.modules().items():
            if hasattr(request.module, name):
                monkeypatch.setattr(request.module, name, module)

    def make(**kwargs: Any) -> SQLAlchemyStore:
        args = database_pool.args(backend, len(made))
        if simulated is not None:
            kwargs["clock"] = simulated.clock
        store = SQLAlchemyStore.from_conn_string(args.pop("conn_string"), **args, **kwargs)
        if simulated is not None:
            simulated.watch(store)
        made.append(store)
        store.setup()
        empty(store)
        return store

    support.MAKERS.append(make)
    try:
        yield make
    finally:
        support.MAKERS.remove(make)
        for store in reversed(made):
            store.stop_ttl_sweeper(timeout=60)
            await store.aclose()
