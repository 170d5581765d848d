"""Fast growth of a store for the scale benchmark: one template thread written through the
real saver, then its rows replicated into new threads with bulk inserts.

A thread is 10 realistic checkpoints (:mod:`.data`), each with 2 pending writes, and
metadata carrying a per-thread ``user_id``. Thread ``i`` is ``scale-<i:09d>`` with user
``user-<i:09d>``; the template is thread 0. Replicated rows are the template's rows with
the thread id, the user id and the checkpoint ids substituted wherever they occur (text,
bytes and JSON columns alike; every substitute has the same length as what it replaces, so
serialised values stay valid). Checkpoint ids stay UUIDv6 with the template's node and
clock bits and a timestamp moved 1 ms later per thread: thread ``i + 1`` sorts (as text)
after thread ``i``, the newest thread has the largest ids.

Whatever tables the saver at HEAD has are copied: every table with a ``thread_id``
column (so a summary or metadata-index table added by a later revision is grown too).
No ``ANALYZE`` is run: the planner sees what an application's bulk growth leaves.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable
from typing import Any
from uuid import UUID

from sqlalchemy import (
    JSON,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    cast,
    create_engine,
    event,
    select,
    type_coerce,
)
from sqlalchemy.engine import Engine, make_url

from .backends import Store, open_sync
from .data import History, write_batch

PER_THREAD = 10  # checkpoints a thread
#: Simulated time between two threads' first checkpoints, in 100 ns units (1 ms).
THREAD_SPAN = 10_000
_UUID_EPOCH = 0x01B21DD213814000


def thread_id(i: int) -> str:
    return f"scale-{i:09d}"


def user_id(i: int) -> str:
    return f"user-{i:09d}"


def write_template(impl: str, store: Store) -> None:
    """Thread 0 through the real saver: 10 checkpoints, each followed by 2 writes."""
    with open_sync(impl, store, fill=True) as saver:
        history = History(saver, thread_id(0), metadata={"user_id": user_id(0)})
        for step in range(PER_THREAD):
            history.put()
            saver.put_writes(history.config, write_batch(step), f"task-{step:04d}")


def _timestamp(checkpoint_id: str) -> tuple[int, int]:
    """``(timestamp, low 64 bits)`` of a UUIDv6."""
    n = UUID(checkpoint_id).int
    return ((n >> 80) << 12) | ((n >> 64) & 0xFFF), n & ((1 << 64) - 1)


def _uuid6(timestamp: int, low: int) -> str:
    n = ((timestamp >> 12) & 0xFFFFFFFFFFFF) << 80 | (0x6000 | (timestamp & 0xFFF)) << 64 | low
    h = f"{n:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def loader_engine(store: Store) -> Engine:
    """An engine for bulk loading: no fsync waits (SQLite ``synchronous = OFF``, PostgreSQL
    ``synchronous_commit = off``); rows written are the same."""
    if store.dialect == "postgres":
        url = make_url(store.fill_url).set(drivername="postgresql+psycopg")
        return create_engine(url)
    engine = create_engine(store.url)
    if store.dialect == "sqlite":

        @event.listens_for(engine, "connect")
        def _pragmas(dbapi_conn: Any, _record: Any) -> None:
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA synchronous = OFF")
            cur.execute("PRAGMA busy_timeout = 30000")
            cur.close()

    return engine


class Replicator:
    """Grows one store (one saver's tables) from its template thread.

    Rows go through the driver's ``executemany`` (the harness's own INSERT of the reflected
    columns), JSON columns read and written as text so that no value is decoded.

    Args:
        store: The store; :func:`write_template` has run on it.
        log: Progress sink (loading rate and ETA).
    """

    def __init__(self, store: Store, log: Callable[[str], None]) -> None:
        self.store = store
        self.log = log
        self.engine = loader_engine(store)
        meta = MetaData()
        meta.reflect(self.engine)
        self.tables = [t for t in meta.sorted_tables if "thread_id" in t.c]
        self.threads = 1  # thread 0, the template
        q = self.engine.dialect.identifier_preparer.quote
        mark = "?" if self.engine.dialect.paramstyle == "qmark" else "%s"
        template: dict[str, list[tuple[Any, ...]]] = {}
        self._sql: dict[str, str] = {}
        with self.engine.connect() as conn:
            for table in self.tables:
                cols = [c for c in table.c if c.name not in self._autoincrement(table)]
                picked = [cast(c, Text) if isinstance(c.type, JSON) else c for c in cols]
                stmt = select(*picked).where(_text(table.c.thread_id) == thread_id(0))
                template[table.name] = [tuple(r) for r in conn.execute(stmt)]
                names = ", ".join(q(c.name) for c in cols)
                self._sql[table.name] = (
                    f"COPY {q(table.name)} ({names}) FROM STDIN"
                    if store.dialect == "postgres"
                    else f"INSERT INTO {q(table.name)} ({names}) "  # noqa: S608 (reflected names)
                    f"VALUES ({', '.join([mark] * len(cols))})"
                )
            ids_table = next(t for t in self.tables if "checkpoint_id" in t.c)
            stmt = select(ids_table.c.checkpoint_id).where(
                _text(ids_table.c.thread_id) == thread_id(0)
            )
            self.ids = sorted({_str(r[0]) for r in conn.execute(stmt)})
        if len(self.ids) != PER_THREAD:
            raise RuntimeError(f"template has {len(self.ids)} checkpoint ids, not {PER_THREAD}")
        self._stamps = [_timestamp(c) for c in self.ids]
        self._span = max(THREAD_SPAN, self._stamps[-1][0] - self._stamps[0][0] + 1)
        self._olds = [thread_id(0), user_id(0), *self.ids]
        pattern = re.compile("(" + "|".join(re.escape(o) for o in self._olds) + ")")
        bpattern = re.compile(b"(" + b"|".join(re.escape(o.encode()) for o in self._olds) + b")")
        keys = {o: n for n, o in enumerate(self._olds)}
        bkeys = {o.encode(): n for n, o in enumerate(self._olds)}
        # Each template value either as is, or split around what is substituted:
        # [literal, key, literal, key, ..., literal] with keys as indexes into _olds.
        self._template: dict[str, list[list[Any]]] = {}
        for name, rows in template.items():
            self._template[name] = [
                [_split(v, pattern, bpattern, keys, bkeys) for v in row] for row in rows
            ]
        self.rows_per_thread = sum(len(v) for v in template.values())

    @staticmethod
    def _autoincrement(table: Table) -> set[str]:
        """Surrogate integer keys the database numbers itself: left out of the copies."""
        pk = list(table.primary_key.columns)
        if len(pk) == 1 and isinstance(pk[0].type, Integer) and pk[0].name != "idx":
            return {pk[0].name}
        return set()

    def checkpoint_id(self, i: int, k: int) -> str:
        """Checkpoint ``k`` (0 = oldest) of thread ``i``."""
        if i == 0:
            return self.ids[k]
        stamp, low = self._stamps[k]
        return _uuid6(stamp + i * self._span, low)

    def rows(self, name: str, i: int) -> list[tuple[Any, ...]]:
        """The template's rows of table ``name`` as thread ``i``'s."""
        new = [thread_id(i), user_id(i), *(self.checkpoint_id(i, k) for k in range(PER_THREAD))]
        bnew = [n.encode() for n in new]
        out = []
        for row in self._template[name]:
            values = []
            for v in row:
                if type(v) is _Split:
                    subs = bnew if v.binary else new
                    parts = v.parts
                    joined = [parts[0]]
                    for n in range(1, len(parts), 2):
                        joined.append(subs[parts[n]])
                        joined.append(parts[n + 1])
                    values.append(b"".join(joined) if v.binary else "".join(joined))
                else:
                    values.append(v)
            out.append(tuple(values))
        return out

    def grow(self, threads: int, *, batch: int = 1_000) -> float:
        """Add threads until the store holds ``threads``; returns the seconds it took."""
        start, total = self.threads, threads - self.threads
        t0 = last = time.perf_counter()
        while self.threads < threads:
            upto = min(threads, self.threads + batch)
            with self.engine.begin() as conn:
                for name, sql in self._sql.items():
                    rows = [r for i in range(self.threads, upto) for r in self.rows(name, i)]
                    if rows and self.store.dialect == "postgres":
                        _copy(conn, sql, rows)
                    elif rows:
                        conn.exec_driver_sql(sql, rows)
            self.threads = upto
            now = time.perf_counter()
            if now - last > 5 or self.threads == threads:
                last = now
                done = self.threads - start
                rate = done * PER_THREAD / (now - t0)
                eta = (total - done) * PER_THREAD / rate
                self.log(
                    f"  {self.store.dialect} {self.store.name[-24:]}: "
                    f"{self.threads * PER_THREAD:,} checkpoints "
                    f"({rate:,.0f} ckpt/s, {rate * self.rows_per_thread / PER_THREAD:,.0f} "
                    f"rows/s, ETA {eta:.0f} s)"
                )
        return time.perf_counter() - t0

    def settle(self) -> None:
        """Write out what the load left in memory before anything is timed: PostgreSQL
        ``CHECKPOINT`` (its dirty buffers), then the kernel's dirty pages (``os.sync``; the
        loader did not wait for the disk). Without it the first commits measured paid for
        the load: a SQLite ``prune`` of 10 threads took 0.05-7.5 s at random instead of
        0.15 s. Not ``ANALYZE``: statistics stay as the load left them."""
        if self.store.dialect == "postgres":
            with self.engine.connect() as conn:
                conn.exec_driver_sql("CHECKPOINT")
        os.sync()

    def quiesce(self) -> None:
        """Before a timed delete or prune: MariaDB waits until InnoDB has purged what
        the deletes timed before left behind (``SET GLOBAL innodb_max_purge_lag_wait =
        0``), which it does in the background, on any store of the server. Without it a
        prune paid for the previous size's: at 300,000 checkpoints 259 and 272 ms when
        timed after the other sizes' prunes, 162 ms when first (one run, three rounds)."""
        if self.store.dialect == "mariadb":
            with self.engine.connect() as conn:
                conn.exec_driver_sql("SET GLOBAL innodb_max_purge_lag_wait = 0")

    def close(self) -> None:
        self.engine.dispose()


def _copy(conn: Any, sql: str, rows: list[tuple[Any, ...]]) -> None:
    """PostgreSQL: the rows through ``COPY ... FROM STDIN`` (psycopg adapts each value)."""
    with conn.connection.dbapi_connection.cursor() as cur, cur.copy(sql) as copy:
        for row in rows:
            copy.write_row(row)


def _text(column: Any) -> Any:
    """``column`` compared as text (MySQL/MariaDB key columns are VARBINARY)."""
    return type_coerce(column, String)


def _str(value: str | bytes) -> str:
    return value.decode() if isinstance(value, bytes) else value


class _Split:
    __slots__ = ("binary", "parts")

    def __init__(self, parts: list[Any], binary: bool) -> None:
        self.parts = parts
        self.binary = binary


def _split(
    value: Any,
    pattern: re.Pattern[str],
    bpattern: re.Pattern[bytes],
    keys: dict[str, int],
    bkeys: dict[bytes, int],
) -> Any:
    """``value`` as is, or a :class:`_Split` if it holds a template id."""
    if isinstance(value, str):
        parts: list[Any] = pattern.split(value)
        lookup: dict[Any, int] = keys
    elif isinstance(value, (bytes, memoryview)):
        parts = bpattern.split(bytes(value))
        lookup = bkeys
    else:
        return value
    if len(parts) == 1:
        return value if not isinstance(value, memoryview) else bytes(value)
    for n in range(1, len(parts), 2):
        parts[n] = lookup[parts[n]]
    return _Split(parts, isinstance(value, (bytes, memoryview)))
