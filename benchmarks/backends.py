"""Where the savers store (a fresh SQLite file, PostgreSQL schema or MariaDB database per
store) and how each saver is opened there.

Savers: ``ours`` is ``SQLAlchemySaver``; ``official`` is ``SqliteSaver`` /
``AsyncSqliteSaver`` on SQLite and ``PostgresSaver`` / ``AsyncPostgresSaver`` on
PostgreSQL. MariaDB has no official saver.
"""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from sqlalchemy import bindparam, create_engine, inspect, text
from sqlalchemy.engine import Engine, make_url

from langgraph.checkpoint.sqlalchemy import SQLAlchemySaver

POSTGRES_URL = os.environ.get(
    "LGSA_BENCH_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/postgres"
)
MARIADB_URL = os.environ.get("LGSA_BENCH_MARIADB_URL", "mysql+pymysql://root@127.0.0.1:3306/mysql")

DIALECTS = ("sqlite", "postgres", "mariadb")
DIALECT_NAMES = {"sqlite": "SQLite", "postgres": "PostgreSQL", "mariadb": "MariaDB"}
OFFICIAL_NAMES = {
    ("sqlite", "sync"): "SqliteSaver",
    ("sqlite", "async"): "AsyncSqliteSaver",
    ("postgres", "sync"): "PostgresSaver",
    ("postgres", "async"): "AsyncPostgresSaver",
}
#: Tables whose size is the storage of a saver (not its migration/version table).
TABLES = {
    "ours": ("lgsa_checkpoints", "lgsa_checkpoint_blobs", "lgsa_checkpoint_writes"),
    ("official", "sqlite"): ("checkpoints", "writes"),
    ("official", "postgres"): ("checkpoints", "checkpoint_blobs", "checkpoint_writes"),
}
_PG_KWARGS = {"autocommit": True, "prepare_threshold": 0}


def has_official(dialect: str) -> bool:
    return dialect != "mariadb"


def tables(impl: str, dialect: str) -> tuple[str, ...]:
    return TABLES["ours"] if impl == "ours" else TABLES[(impl, dialect)]


@dataclass(frozen=True)
class Store:
    """One empty place for one saver: a SQLite file, a PostgreSQL schema (in the run's
    database, reached through ``search_path`` by both savers) or a MariaDB database."""

    dialect: str
    name: str  # file path, schema name or database name
    url: str  # SQLAlchemy URL (ours, and the harness's own queries)
    native: str  # what the official saver takes: file path or libpq URL
    fill_url: str = ""  # PostgreSQL: ``url`` with synchronous_commit off, for filling

    def target(self, impl: str, fill: bool) -> str:
        """What ``impl`` connects to; ``fill``: without waiting for WAL flushes."""
        if fill and self.fill_url:
            return self.fill_url
        return self.url if impl == "ours" else self.native


class Servers:
    """The run's places: a temp dir, one PostgreSQL database ``lgsa_bench_<random>`` with
    a schema per store, one MariaDB database per store. :meth:`close` drops them all."""

    def __init__(self, dialects: tuple[str, ...]) -> None:
        self.dialects = dialects
        self.run_id = uuid.uuid4().hex[:8]
        self.tmp = tempfile.mkdtemp(prefix="lgsa_bench_")
        self._counter = itertools.count()
        self._pg_admin: Engine | None = None
        self._pg_run: Engine | None = None
        self._maria: Engine | None = None
        self.pg_database = f"lgsa_bench_{self.run_id}"
        self._maria_databases: list[str] = []
        if "postgres" in dialects:
            self._pg_admin = create_engine(_sa_pg(POSTGRES_URL), isolation_level="AUTOCOMMIT")
            with self._pg_admin.connect() as conn:
                conn.execute(text(f'CREATE DATABASE "{self.pg_database}"'))
            run_url = make_url(_sa_pg(POSTGRES_URL)).set(database=self.pg_database)
            self._pg_run = create_engine(run_url, isolation_level="AUTOCOMMIT")
        if "mariadb" in dialects:
            self._maria = create_engine(MARIADB_URL, isolation_level="AUTOCOMMIT")

    def new_store(self, dialect: str) -> Store:
        n = next(self._counter)
        if dialect == "sqlite":
            path = os.path.join(self.tmp, f"store_{n}.sqlite")
            return Store(dialect, path, f"sqlite:///{path}", path)
        if dialect == "postgres":
            assert self._pg_run is not None
            schema = f"s{n}"
            with self._pg_run.connect() as conn:
                conn.execute(text(f"CREATE SCHEMA {schema}"))
            base = make_url(POSTGRES_URL).set(drivername="postgresql", database=self.pg_database)
            url = base.render_as_string(hide_password=False) + "?options="
            fill_url = url + quote(f"-csearch_path={schema} -csynchronous_commit=off")
            url += quote(f"-csearch_path={schema}")
            return Store(dialect, schema, url, url, fill_url)
        if dialect == "mariadb":
            assert self._maria is not None
            database = f"lgsa_bench_{self.run_id}_{n}"
            with self._maria.connect() as conn:
                conn.execute(text(f"CREATE DATABASE `{database}`"))
            self._maria_databases.append(database)
            url = make_url(MARIADB_URL).set(database=database).render_as_string(hide_password=False)
            return Store(dialect, database, url, url)
        raise ValueError(dialect)

    def drop(self, store: Store) -> None:
        """Free a store's disk space once its workload is done."""
        if store.dialect == "sqlite":
            for suffix in ("", "-wal", "-shm"):
                if os.path.exists(store.name + suffix):
                    os.remove(store.name + suffix)
        elif store.dialect == "postgres":
            assert self._pg_run is not None
            with self._pg_run.connect() as conn:
                conn.execute(text(f"DROP SCHEMA {store.name} CASCADE"))
        else:
            assert self._maria is not None
            with self._maria.connect() as conn:
                conn.execute(text(f"DROP DATABASE IF EXISTS `{store.name}`"))

    def server_versions(self) -> dict[str, str]:
        import sqlite3

        result = {"sqlite": sqlite3.sqlite_version}
        if self._pg_run is not None:
            with self._pg_run.connect() as conn:
                result["postgresql"] = str(conn.execute(text("SHOW server_version")).scalar())
        if self._maria is not None:
            with self._maria.connect() as conn:
                result["mariadb"] = str(conn.execute(text("SELECT VERSION()")).scalar())
        return result

    def close(self) -> None:
        if self._pg_run is not None:
            self._pg_run.dispose()
        if self._pg_admin is not None:
            with self._pg_admin.connect() as conn:
                conn.execute(text(f'DROP DATABASE IF EXISTS "{self.pg_database}" WITH (FORCE)'))
            self._pg_admin.dispose()
        if self._maria is not None:
            with self._maria.connect() as conn:
                for database in self._maria_databases:
                    conn.execute(text(f"DROP DATABASE IF EXISTS `{database}`"))
            self._maria.dispose()
        shutil.rmtree(self.tmp, ignore_errors=True)


def _sa_pg(url: str) -> str:
    return make_url(url).set(drivername="postgresql+psycopg").render_as_string(hide_password=False)


# -- opening savers -------------------------------------------------------------------------


@contextmanager
def open_sync(
    impl: str, store: Store, *, pool: int = 1, fill: bool = False, normal: bool = False
) -> Iterator[Any]:
    """A set-up sync saver on ``store``; ``pool`` > 1 gives it that many connections.

    ``normal``: SqliteSaver at ``synchronous = NORMAL``, the setting our saver ships
    with (a WAL commit that does not wait for fsync), instead of SQLite's default FULL.

    ``fill``: for filling stores before read workloads, commits do not wait for the disk
    (PostgreSQL ``synchronous_commit = off``, SqliteSaver ``synchronous = OFF``; our
    saver's SQLite connections are ``synchronous = NORMAL`` in WAL mode already): the
    rows written are the same, they are written sooner."""
    if impl == "ours":
        kwargs = {"pool_size": pool} if pool > 1 else {}
        saver = SQLAlchemySaver.from_conn_string(store.target(impl, fill), **kwargs)
        try:
            saver.setup()
            yield saver
        finally:
            saver.close()
    elif store.dialect == "sqlite":
        from langgraph.checkpoint.sqlite import SqliteSaver

        with SqliteSaver.from_conn_string(store.native) as saver:
            saver.setup()
            if fill:
                saver.conn.execute("PRAGMA synchronous = OFF")
            elif normal:
                saver.conn.execute("PRAGMA synchronous = NORMAL")
            yield saver
    elif pool > 1:
        from langgraph.checkpoint.postgres import PostgresSaver
        from psycopg.rows import dict_row
        from psycopg_pool import ConnectionPool

        kwargs = {**_PG_KWARGS, "row_factory": dict_row}
        with ConnectionPool(store.native, min_size=pool, max_size=pool, kwargs=kwargs) as p:
            saver = PostgresSaver(p)  # type: ignore[arg-type]
            saver.setup()
            yield saver
    else:
        from langgraph.checkpoint.postgres import PostgresSaver

        with PostgresSaver.from_conn_string(store.target(impl, fill)) as saver:
            saver.setup()
            yield saver


@asynccontextmanager
async def open_async(
    impl: str, store: Store, *, pool: int = 1, normal: bool = False
) -> AsyncIterator[Any]:
    """A set-up async saver on ``store``, inside the running event loop (``normal``: as
    for :func:`open_sync`)."""
    if impl == "ours":
        kwargs = {"pool_size": pool} if pool > 1 else {}
        saver = SQLAlchemySaver.from_conn_string(store.url, **kwargs)
        try:
            await saver.asetup()
            yield saver
        finally:
            await saver.aclose()
    elif store.dialect == "sqlite":
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

        async with AsyncSqliteSaver.from_conn_string(store.native) as saver:
            await saver.setup()
            if normal:
                await saver.conn.execute("PRAGMA synchronous = NORMAL")
            yield saver
    elif pool > 1:
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
        from psycopg.rows import dict_row
        from psycopg_pool import AsyncConnectionPool

        kwargs = {**_PG_KWARGS, "row_factory": dict_row}
        async with AsyncConnectionPool(
            store.native, min_size=pool, max_size=pool, kwargs=kwargs, open=False
        ) as p:
            saver = AsyncPostgresSaver(p)  # type: ignore[arg-type]
            await saver.setup()
            yield saver
    else:
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

        async with AsyncPostgresSaver.from_conn_string(store.native) as saver:
            await saver.setup()
            yield saver


# -- looking at what a saver stored ------------------------------------------------------------


def storage_bytes(store: Store, names: tuple[str, ...]) -> int:
    """Bytes the tables ``names`` (with their indexes, and TOAST on PostgreSQL) occupy:
    SQLite ``dbstat`` pages, PostgreSQL ``pg_total_relation_size``, MariaDB InnoDB
    ``data_length + index_length`` after ``ANALYZE TABLE``."""
    engine = create_engine(store.url)
    try:
        with engine.connect() as conn:
            if store.dialect == "sqlite":
                conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
                sql = (
                    "SELECT COALESCE(SUM(d.pgsize), 0) FROM dbstat d "
                    "JOIN sqlite_master m ON m.name = d.name WHERE m.tbl_name IN :t"
                )
            elif store.dialect == "postgres":
                sql = (
                    "SELECT COALESCE(SUM(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
                    "WHERE c.relnamespace = current_schema()::regnamespace "
                    "AND c.relkind = 'r' AND c.relname IN :t"
                )
            else:
                for name in names:
                    conn.exec_driver_sql(f"ANALYZE TABLE `{name}`").fetchall()
                sql = (
                    "SELECT COALESCE(SUM(data_length + index_length), 0) "
                    "FROM information_schema.tables "
                    "WHERE table_schema = DATABASE() AND table_name IN :t"
                )
            stmt = text(sql).bindparams(bindparam("t", expanding=True))
            return int(conn.execute(stmt, {"t": list(names)}).scalar_one())
    finally:
        engine.dispose()


def analyze(store: Store, names: tuple[str, ...]) -> None:
    """Refresh the planner statistics of a filled store, as PostgreSQL's autovacuum and
    InnoDB's automatic statistics do within a minute of a bulk load (SQLite has no such
    thing: left as an application leaves it)."""
    if store.dialect == "sqlite":
        return
    engine = create_engine(store.url)
    try:
        with engine.connect() as conn:
            if store.dialect == "postgres":
                conn.exec_driver_sql(f"ANALYZE {', '.join(names)}")
            else:
                conn.exec_driver_sql(f"ANALYZE TABLE {', '.join(names)}").fetchall()
            conn.commit()
    finally:
        engine.dispose()


def copy_thread(store: Store, names: tuple[str, ...], source: str, targets: list[str]) -> None:
    """Copy every row of thread ``source`` to each thread of ``targets`` with
    ``INSERT ... SELECT`` (same rows as the saver wrote, other thread id)."""
    engine = create_engine(store.url)
    try:
        columns = {name: [c["name"] for c in inspect(engine).get_columns(name)] for name in names}
        q = engine.dialect.identifier_preparer.quote
        with engine.begin() as conn:
            for target in targets:
                for name, cols in columns.items():
                    select = ", ".join(":target" if c == "thread_id" else q(c) for c in cols)
                    sql = (
                        f"INSERT INTO {q(name)} ({', '.join(q(c) for c in cols)}) "  # noqa: S608
                        f"SELECT {select} FROM {q(name)} WHERE thread_id = :source"
                    )
                    conn.execute(text(sql), {"target": target, "source": source})
            count = f"SELECT COUNT(*) FROM {q(names[0])} WHERE thread_id = :t"  # noqa: S608
            expected = conn.execute(text(count), {"t": source}).scalar_one()
            for target in targets:
                assert conn.execute(text(count), {"t": target}).scalar_one() == expected
    finally:
        engine.dispose()
