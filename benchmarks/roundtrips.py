"""``python -m benchmarks.roundtrips``: client-server round trips per saver operation, ours
and the official saver's, counted on the wire rather than inferred from the code.

PostgreSQL: libpq's protocol trace of the connection (``PGconn.trace``); a round trip is
a run of messages the client sent followed by the server's answer, so a pipeline of
several statements counts once. MariaDB: the server's general log (``log_output =
TABLE``, switched on for the count and restored), one entry a command of our
connection (each command waits for its answer). Each operation runs twice untimed
first (connections, prepared statements), then once counted. Prints a markdown table
(docs/benchmarks.md, "Round trips").
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import uuid
from collections.abc import Callable
from typing import Any

from psycopg import pq
from sqlalchemy import create_engine, text

from .backends import MARIADB_URL, Servers, open_async, open_sync
from .data import History, write_batch
from .workloads import thread_config

OPS = (
    ("put", "put, values inline (one row)"),
    ("put_blob", "put with a new 1 MB value (blob row)"),
    ("put_writes", "put_writes, 2 writes"),
    ("get_latest", "get_tuple, latest"),
    ("get_by_id", "get_tuple, by id"),
    ("list", "list(thread, limit=10)"),
    ("delete", "delete_thread"),
)


class _Subject:
    def __init__(self, saver: Any) -> None:
        self.saver = saver
        self.h = History(saver, "rt")
        self.big = History(saver, "rt-big", big=True)

    def fill(self) -> None:
        for _ in range(12):
            self.h.put()
        self.saver.put_writes(self.h.config, write_batch(0), str(uuid.uuid4()))

    async def afill(self) -> None:
        for _ in range(12):
            await self.h.aput()
        await self.saver.aput_writes(self.h.config, write_batch(0), str(uuid.uuid4()))

    def op(self, name: str, is_async: bool) -> Callable[[], Any]:
        s, h = self.saver, self.h
        a = "a" if is_async else ""
        if name == "put":
            return h.aput if is_async else h.put
        if name == "put_blob":
            return self.big.aput if is_async else self.big.put
        if name == "put_writes":
            return lambda: getattr(s, a + "put_writes")(h.config, write_batch(1), str(uuid.uuid4()))
        if name == "get_latest":
            return lambda: getattr(s, a + "get_tuple")(thread_config("rt"))
        if name == "get_by_id":
            return lambda: getattr(s, a + "get_tuple")(thread_config("rt", h.ids[3]))
        if name == "list":
            if is_async:

                async def alist() -> None:
                    [c async for c in s.alist(thread_config("rt"), limit=10)]

                return alist
            return lambda: list(s.list(thread_config("rt"), limit=10))

        def delete() -> Any:
            thread = f"gone-{uuid.uuid4().hex[:6]}"
            return getattr(s, a + "delete_thread")(thread)

        return delete


def _round_trips(trace_path: str) -> int:
    """Runs of client messages answered by the server, in a libpq trace file."""
    count, last = 0, ""
    with open(trace_path, encoding="utf-8", errors="replace") as f:
        for line in f:
            direction = line.split("\t", 1)[0]
            if direction == "B" and last == "F":
                count += 1
            if direction in ("F", "B"):
                last = direction
    return count


def _pg_conns() -> list[Any]:
    """The libpq connections of every open psycopg connection of the process: the saver's
    (pooled, or held by its lane) and nothing else, as one saver is open at a time. Each
    is traced, and their round trips summed: a call that used a second connection counts
    it too."""
    import gc

    import psycopg

    kinds = (psycopg.Connection, psycopg.AsyncConnection)
    return [o.pgconn for o in gc.get_objects() if isinstance(o, kinds) and not o.closed]


def _counted(tmp: str, label: str) -> tuple[list[Any], list[Any], list[str]]:
    """Start tracing every open connection (:func:`_pg_conns`); what :func:`_stop` takes."""
    conns, files, paths = _pg_conns(), [], []
    for i, pgconn in enumerate(conns):
        path = os.path.join(tmp, f"{label}-{i}.trace")
        files.append(_traced(pgconn, path))
        paths.append(path)
    return conns, files, paths


def _stop(started: tuple[list[Any], list[Any], list[str]]) -> int:
    conns, files, paths = started
    for pgconn, fh in zip(conns, files, strict=True):
        pgconn.untrace()
        fh.close()
    return sum(_round_trips(p) for p in paths)


def _traced(pgconn: Any, path: str) -> Any:
    f = open(path, "w", encoding="utf-8")  # noqa: SIM115 - closed by the caller
    pgconn.trace(f.fileno())
    pgconn.set_trace_flags(pq.Trace.SUPPRESS_TIMESTAMPS | pq.Trace.REGRESS_MODE)
    return f


def postgres(servers: Servers, tmp: str) -> dict[tuple[str, str, str], int]:
    counts: dict[tuple[str, str, str], int] = {}
    for impl in ("ours", "official"):
        with open_sync(impl, servers.new_store("postgres")) as saver:
            sub = _Subject(saver)
            sub.fill()
            for name, _ in OPS:
                f = sub.op(name, False)
                f()
                f()
                started = _counted(tmp, f"{impl}-sync-{name}")
                f()
                counts[(impl, "sync", name)] = _stop(started)

        async def run_async(impl: str = impl) -> None:
            async with open_async(impl, servers.new_store("postgres")) as saver:
                sub = _Subject(saver)
                await sub.afill()
                for name, _ in OPS:
                    f = sub.op(name, True)
                    await f()
                    await f()
                    started = _counted(tmp, f"{impl}-async-{name}")
                    await f()
                    counts[(impl, "async", name)] = _stop(started)

        asyncio.run(run_async())
    return counts


def mariadb(servers: Servers) -> dict[tuple[str, str, str], int]:
    counts: dict[tuple[str, str, str], int] = {}
    admin = create_engine(MARIADB_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        before = conn.execute(text("SELECT @@global.general_log, @@global.log_output")).one()
        conn.execute(text("SET GLOBAL log_output = 'TABLE'"))
        conn.execute(text("SET GLOBAL general_log = 1"))
    try:

        def count(conn_id: int, mark: str) -> int:
            with admin.connect() as conn:
                return int(
                    conn.execute(
                        text(
                            "SELECT COUNT(*) FROM mysql.general_log WHERE thread_id = :t "
                            "AND event_time > :m AND command_type <> 'Quit'"
                        ),
                        {"t": conn_id, "m": mark},
                    ).scalar_one()
                )

        def now() -> str:
            with admin.connect() as conn:
                return str(conn.execute(text("SELECT NOW(6)")).scalar_one())

        with open_sync("ours", servers.new_store("mariadb")) as saver:
            sub = _Subject(saver)
            sub.fill()
            with saver.engine.connect() as c:
                conn_id = int(c.execute(text("SELECT CONNECTION_ID()")).scalar_one())
            for name, _ in OPS:
                f = sub.op(name, False)
                f()
                f()
                mark = now()
                f()
                counts[("ours", "sync", name)] = count(conn_id, mark)
    finally:
        with admin.connect() as conn:
            conn.execute(text("SET GLOBAL general_log = :g"), {"g": before[0]})
            conn.execute(text("SET GLOBAL log_output = :o"), {"o": before[1]})
        admin.dispose()
    return counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.roundtrips", description=__doc__)
    parser.parse_args(argv)
    servers = Servers(("postgres", "mariadb"))
    tmp = tempfile.mkdtemp(prefix="lgsa_rt_")
    try:
        pg = postgres(servers, tmp)
        maria = mariadb(servers)
    finally:
        servers.close()
    print(
        "| operation | PostgreSQL sync: ours / PostgresSaver | PostgreSQL async: ours / "
        "AsyncPostgresSaver | MariaDB sync: ours |"
    )
    print("|---|---|---|---|")
    for name, label in OPS:
        print(
            f"| {label} | {pg[('ours', 'sync', name)]} / {pg[('official', 'sync', name)]} "
            f"| {pg[('ours', 'async', name)]} / {pg[('official', 'async', name)]} "
            f"| {maria[('ours', 'sync', name)]} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
