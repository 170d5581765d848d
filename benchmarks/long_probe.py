"""The child of the long-thread benchmark (:mod:`.long_thread`): one workload on one saver,
turn by turn, in a process of its own (under callgrind when instructions are counted).

Instructions: the process runs under ``valgrind --tool=callgrind --collect-atstart=no``,
so nothing is counted until a thread turns collection on. A tiny C library, compiled at
run time from ``valgrind/callgrind.h`` (:data:`CALLGRIND_SOURCE`), exposes
``CALLGRIND_TOGGLE_COLLECT`` and ``CALLGRIND_DUMP_STATS`` to ``ctypes``. Every public
method of the saver *instance* is replaced by a wrapper (:class:`Probe`) that turns
collection on when a thread enters the saver and off when it leaves (a per-thread depth
counter: a saver method calling another, ``SqliteSaver.put`` calling ``self.cursor()``,
toggles once). Callgrind's collection state is per thread, so LangGraph's background
threads (the sync loop puts checkpoints and writes from an executor) are counted inside
the saver only, and the main thread's graph work beside them is not. After each turn's
``invoke`` returns (every checkpoint written) the main thread dumps: one dump a turn,
the instructions of that turn's saver calls. The wrapper's own cost (the ``ctypes``
calls and the few Python lines inside the counted region) is measured first by a
calibration loop of wrapped no-op methods, outermost and nested, and subtracted per
call by the parent. The graph is the real one: LangGraph calls the saver with its own
objects, nothing is replayed.

Bytes: after each turn (collection off) the sum of the lengths of the saver's value
columns (:func:`value_columns`), through a connection of its own.

The spec (JSON on the command line) and the result (a JSON file) are the parent's.
"""

from __future__ import annotations

import ctypes
import functools
import gc
import inspect
import json
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

from sqlalchemy import Column, LargeBinary, MetaData, Table, Text, cast, create_engine, func, select
from sqlalchemy import inspect as sa_inspect
from sqlalchemy.engine import Engine
from sqlalchemy.types import JSON

__all__ = [
    "CALIBRATION_CALLS",
    "CALLGRIND_SOURCE",
    "FINAL_READS",
    "Probe",
    "child",
    "value_columns",
]

CALLGRIND_SOURCE = """
#include <valgrind/callgrind.h>
void lgsa_lt_toggle(void) { CALLGRIND_TOGGLE_COLLECT; }
void lgsa_lt_dump(void) { CALLGRIND_DUMP_STATS; }
"""
#: Wrapped no-op calls a calibration segment makes (outermost, then nested).
CALIBRATION_CALLS = 2000
#: ``get_tuple`` calls of the finished thread's latest checkpoint, a segment each.
FINAL_READS = 3
#: Tables of each saver whose binary and JSON columns hold its values: ours, every table
#: whose name starts with the prefix (the checkpoints, blobs and writes tables, and any a
#: later schema adds beside them); the official savers, their checkpoint tables.
VALUE_TABLES: dict[str, tuple[str, ...]] = {
    "ours": ("lgsa_checkpoint",),
    "official:sqlite": ("checkpoints", "writes"),
    "official:postgres": ("checkpoints", "checkpoint_blobs", "checkpoint_writes"),
}


def _noop() -> None:
    return None


class Probe:
    """Collection on inside the saver's methods only; calls counted by method.

    Args:
        toggle: ``CALLGRIND_TOGGLE_COLLECT`` (a no-op without callgrind).
    """

    def __init__(self, toggle: Callable[[], Any]) -> None:
        self.toggle = toggle
        self.local = threading.local()
        self.lock = threading.Lock()
        self.outer: Counter[str] = Counter()  # calls from outside the saver, by method
        self.nested = 0  # calls of a wrapped method from inside another

    def wrap(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        """``fn`` (a bound method) counted only while it runs; keeps its signature
        (``functools.wraps``: LangGraph inspects ``put_writes``'s parameters)."""
        local, toggle = self.local, self.toggle

        @functools.wraps(fn)
        def probed(*args: Any, **kwargs: Any) -> Any:
            depth = getattr(local, "depth", 0)
            if depth == 0:
                toggle()
            local.depth = depth + 1
            try:
                result = fn(*args, **kwargs)
            finally:
                local.depth = depth
                if depth == 0:
                    toggle()
            self._count(name, depth)
            if depth == 0 and inspect.isgenerator(result):
                return self._iterate(name, result)
            return result

        return probed

    def _count(self, name: str, depth: int) -> None:
        with self.lock:
            if depth == 0:
                self.outer[name] += 1
            else:
                self.nested += 1

    def _iterate(self, name: str, items: Iterator[Any]) -> Iterator[Any]:
        """A generator method (``list``): each item produced inside the saver, counted."""
        local, toggle = self.local, self.toggle
        while True:
            toggle()
            local.depth = 1
            try:
                item = next(items)
            except StopIteration:
                return
            finally:
                local.depth = 0
                toggle()
                self._count(name + ":next", 0)
            yield item

    def install(self, saver: Any) -> list[str]:
        """Wrap every public method of ``saver`` (on the instance); their names."""
        names = []
        for name in dir(saver):
            if name.startswith("_"):
                continue
            try:
                attr = getattr(saver, name)
            except Exception:
                continue
            if inspect.ismethod(attr):
                setattr(saver, name, self.wrap(name, attr))
                names.append(name)
        return names

    def take(self) -> tuple[dict[str, int], int]:
        """The calls since the last take: outermost by method, and nested."""
        with self.lock:
            outer, nested = dict(self.outer), self.nested
            self.outer.clear()
            self.nested = 0
        return outer, nested


def calibrate(probe: Probe, dump: Callable[[], Any], labels: list[str]) -> None:
    """Two segments: :data:`CALIBRATION_CALLS` wrapped no-op calls, then as many wrapped
    calls each calling a wrapped no-op (outermost + nested)."""
    inner = probe.wrap("calibration", _noop)

    def outer_then_inner() -> None:
        inner()

    outer = probe.wrap("calibration", outer_then_inner)
    for fn, label in ((inner, "calibrate:outer"), (outer, "calibrate:nested")):
        for _ in range(20):
            fn()
        gc.collect()
        dump()
        labels.append("warm-up")
        for _ in range(CALIBRATION_CALLS):
            fn()
        dump()
        labels.append(label)
    probe.take()


# -- bytes ------------------------------------------------------------------------------------


def value_columns(engine: Engine, impl: str) -> list[Column[Any]]:
    """The saver's value columns: every binary or JSON column of its tables
    (:data:`VALUE_TABLES`), reflected from the database."""
    dialect = "postgres" if engine.dialect.name == "postgresql" else engine.dialect.name
    wanted = VALUE_TABLES["ours" if impl == "ours" else f"official:{dialect}"]
    meta = MetaData()
    columns: list[Column[Any]] = []
    for name in sorted(sa_inspect(engine).get_table_names()):
        mine = name.startswith(wanted[0]) if impl == "ours" else name in wanted
        if not mine:
            continue
        table = Table(name, meta, autoload_with=engine)
        for column in table.columns:
            kind = column.type
            if isinstance(kind, (LargeBinary, JSON)) or kind.__class__.__name__ == "BYTEA":
                columns.append(column)
    return columns


def _length(engine: Engine, column: Column[Any]) -> Any:
    """Bytes of a value: SQLite ``length(CAST(x AS BLOB))`` (bytes, not characters),
    PostgreSQL ``octet_length`` (of ``jsonb`` as text), MariaDB ``length``."""
    dialect = engine.dialect.name
    if dialect == "sqlite":
        return func.length(cast(column, LargeBinary))
    if dialect == "postgresql":
        if isinstance(column.type, JSON):
            return func.octet_length(cast(column, Text))
        return func.octet_length(column)
    return func.length(column)


def stored(engine: Engine, columns: list[Column[Any]]) -> dict[str, int]:
    """``{"table.column": bytes}``: the sum of the lengths of each value column."""
    out: dict[str, int] = {}
    with engine.connect() as conn:
        for table in {c.table for c in columns}:
            mine = [c for c in columns if c.table is table]
            stmt = select(*(func.coalesce(func.sum(_length(engine, c)), 0) for c in mine))
            row = conn.execute(stmt).one()
            for c, n in zip(mine, row, strict=True):
                out[f"{table.name}.{c.name}"] = int(n)
    return dict(sorted(out.items()))


# -- the child --------------------------------------------------------------------------------


def child(spec: dict[str, Any]) -> None:
    """Run ``spec["workload"]`` on one saver for ``spec["turns"]`` turns; write the result
    (per turn: calls, bytes stored, wall seconds; the dump labels) to ``spec["result"]``."""
    from .backends import Store, open_sync
    from .long_graphs import build, turn_input

    toggle: Callable[[], Any] = _noop
    dump: Callable[[], Any] = _noop
    if spec.get("library"):
        lib = ctypes.CDLL(spec["library"])
        toggle, dump = lib.lgsa_lt_toggle, lib.lgsa_lt_dump
    store = Store(**spec["store"])
    counter = create_engine(store.url)
    labels: list[str] = []
    turns: list[dict[str, Any]] = []
    try:
        with open_sync(spec["impl"], store, normal=True) as saver:
            probe = Probe(toggle)
            wrapped = probe.install(saver)
            graph = build(spec["workload"], saver)
            columns = value_columns(counter, spec["impl"])
            calibrate(probe, dump, labels)
            config = {"configurable": {"thread_id": "long-thread"}}
            for turn in range(1, spec["turns"] + 1):
                gc.collect()
                gc.freeze()  # a full collection inside a call scans what the turn made
                dump()
                labels.append("settle")
                start = time.perf_counter()
                graph.invoke(turn_input(turn), config)
                wall = time.perf_counter() - start
                dump()
                labels.append(f"turn:{turn}")
                outer, nested = probe.take()
                by_column = stored(counter, columns)
                turns.append(
                    {
                        "turn": turn,
                        "calls": outer,
                        "nested_calls": nested,
                        "stored": sum(by_column.values()),
                        "wall_seconds": round(wall, 4),
                        **({"stored_by_column": by_column} if turn == spec["turns"] else {}),
                    }
                )
            # the latest checkpoint read alone: get_tuple of the whole thread
            for _ in range(FINAL_READS):
                dump()
                labels.append("settle")
                saver.get_tuple(config)
                dump()
                labels.append("get_tuple:final")
            probe.take()
            messages = len(graph.get_state(config).values["messages"])
    finally:
        counter.dispose()
    result = {
        "labels": labels,
        "wrapped": wrapped,
        "value_columns": [f"{c.table.name}.{c.name}" for c in columns],
        "messages": messages,
        "turns": turns,
    }
    with open(spec["result"], "w", encoding="utf-8") as f:
        json.dump(result, f)


if __name__ == "__main__":
    child(json.loads(sys.argv[1]))
