"""Time ``list_threads(limit=20)`` and ``storage_stats()`` as a store grows.

    python -m benchmarks.list_threads_scale [--sizes 10000,200000] [--dialects sqlite,postgres]

Fills a new SQLite file and a new PostgreSQL database with threads of 10 checkpoints
(interleaved in time, UUIDv6 ids, 200-2,000 byte checkpoints, one thread in ten with a
subgraph namespace) by bulk inserts behind the saver's back, runs ``ANALYZE`` (as
autovacuum would), and prints the median of each operation at each size with the growth
factor. Runs against whatever package is imported: ``PYTHONPATH=/path/to/other/src``
times another checkout (operations it lacks are skipped).
"""

from __future__ import annotations

import argparse
import functools
import random
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from typing import Any

from sqlalchemy import create_engine, insert, text

from langgraph.checkpoint.sqlalchemy import SQLAlchemySaver
from langgraph.checkpoint.sqlalchemy.schema import checkpoints

PG_ADMIN = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
_EPOCH = 0x01B21DD213814000  # 100-ns ticks from 1582 to 1970


def uuid6(ticks: int, n: int) -> str:
    """A UUIDv6 of ``ticks`` (100 ns since 1582), unique by ``n``."""
    value = ((ticks >> 12) & 0xFFFFFFFFFFFF) << 80 | (ticks & 0x0FFF) << 64 | 6 << 76
    return str(uuid.UUID(int=value | 2 << 62 | n))


def rows(start: int, count: int, rnd: random.Random) -> list[dict[str, Any]]:
    """Checkpoints ``start`` .. ``start + count`` of the store: thread ``k // 10`` gets 10,
    shuffled within windows of 500 (threads overlap in time)."""
    order = list(range(start, start + count))
    for w in range(0, count, 500):
        window = order[w : w + 500]
        rnd.shuffle(window)
        order[w : w + 500] = window
    base = int(time.time() * 1e7) + _EPOCH - 10**12
    out = []
    for i, k in enumerate(order):
        thread = k // 10
        out.append(
            {
                "thread_id": f"thread-{thread:07}",
                "checkpoint_ns": "sub:1" if thread % 10 == 0 and k % 2 else "",
                "checkpoint_id": uuid6(base + (start + i) * 10_000, start + i),
                "parent_checkpoint_id": None,
                "run_id": f"run-{thread}",
                "source": "loop",
                "step": k % 10,
                "type": "msgpack",
                "checkpoint": rnd.randbytes(rnd.randrange(200, 2000)),
                "metadata": {"source": "loop", "step": k % 10},
                "value_versions": {},
            }
        )
    return out


def timed(fn: Callable[[], Any], repeat: int = 7) -> float:
    fn()  # warm
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1000


def run(url: str, dialect: str, sizes: list[int]) -> dict[str, list[float]]:
    rnd = random.Random(16)
    results: dict[str, list[float]] = {}
    with SQLAlchemySaver.from_conn_string(url) as saver:
        saver.setup()
        loaded = 0
        for size in sizes:
            with saver.engine.begin() as conn:
                for start in range(loaded, size, 10_000):
                    conn.execute(insert(checkpoints), rows(start, min(10_000, size - start), rnd))
            loaded = size
            if dialect == "postgres":
                with saver.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as c:
                    c.exec_driver_sql("ANALYZE")
            ops: dict[str, Callable[[], Any]] = {
                "list_threads(20)": lambda: saver.list_threads(limit=20),
                "storage_stats()": saver.storage_stats,
            }
            try:
                first = saver.list_threads(limit=20)
                saver.list_threads(limit=20, after=first[-1])
                ops["list_threads(20, after=page 1)"] = functools.partial(
                    saver.list_threads, limit=20, after=first[-1]
                )
                saver.storage_stats(estimate=True)
                ops["storage_stats(estimate=True)"] = lambda: saver.storage_stats(estimate=True)
            except TypeError:
                pass  # a checkout without these
            for name, fn in ops.items():
                ms = timed(fn, 7 if name != "storage_stats()" else 3)
                results.setdefault(name, []).append(ms)
                print(f"{dialect:8} {size:>9,} {name:32} {ms:9.2f} ms", flush=True)
    return results


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="10000,200000")
    parser.add_argument("--dialects", default="sqlite,postgres")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    summary = []
    for dialect in args.dialects.split(","):
        if dialect == "sqlite":
            with tempfile.TemporaryDirectory() as tmp:
                results = run(f"sqlite:///{tmp}/scale.sqlite", dialect, sizes)
        else:
            name = f"lgsa_scale_{uuid.uuid4().hex[:8]}"
            admin = create_engine(PG_ADMIN, isolation_level="AUTOCOMMIT")
            with admin.connect() as conn:
                conn.execute(text(f'CREATE DATABASE "{name}"'))
            try:
                results = run(PG_ADMIN.rsplit("/", 1)[0] + "/" + name, dialect, sizes)
            finally:
                with admin.connect() as conn:
                    conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
                admin.dispose()
        for op, ms in results.items():
            summary.append(
                f"{dialect:8} {op:32} "
                + " -> ".join(f"{m:.2f}" for m in ms)
                + f" ms  (x{ms[-1] / ms[0]:.2f})"
            )
    print("\n".join(summary))


if __name__ == "__main__":
    main()
