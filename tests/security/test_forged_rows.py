"""Reads survive any forged row: every column of the three tables, forged with raw SQL.

An attacker (or a bug) with write access to the tables may put anything the database
accepts into any column: bytes that are not msgpack, JSON of the wrong shape, JSON that
is not JSON (SQLite), nesting 10,000 deep, a megabyte string, an integer where text was,
text that is not UTF-8 (MariaDB's binary key columns). Whatever it is, the promise of
docs/guarantees.md holds (hypothesis draws the value, one column at a time):

* ``get_tuple`` of the forged checkpoint returns a tuple or raises
  ``CheckpointDecodeError`` naming the thread and the checkpoint, nothing else;
* the other checkpoints read as before, through ``get_tuple``, ``list(thread)``,
  ``list(None)``, with a filter, ``before`` and ``limit``; a listing that leaves the
  forged checkpoint out logs it (logger ``langgraph.checkpoint.sqlalchemy``, error);
* ``get_delta_channel_history`` through the forged checkpoint returns or raises
  ``CheckpointDecodeError``; a ``put`` of a child of the forged checkpoint works;
* ``list_threads``, ``storage_stats`` and ``prune`` run, and prune keeps what the sane
  latest checkpoint holds.

A value the database refuses (PostgreSQL's JSONB and text types validate, MariaDB's JSON
columns carry ``json_valid`` checks) cannot be forged there: the example checks nothing.
One saver per backend and door; every example forges a thread of its own.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import ormsgpack
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from sqlalchemy import BigInteger, LargeBinary, Table, Text, cast, exc, type_coerce, update
from sqlalchemy.dialects import postgresql
from sqlalchemy.sql.elements import ColumnElement

from langgraph.checkpoint.sqlalchemy import CheckpointDecodeError
from langgraph.checkpoint.sqlalchemy.schema import blobs, checkpoints, writes

from ..doors import Door
from .test_forged import BIG, raw
from .test_hostile import cfg, ids, make_checkpoint

LOGGER = "langgraph.checkpoint.sqlalchemy"
_THREADS = itertools.count()

# -- forged values -----------------------------------------------------------------------


@dataclass(frozen=True)
class Forged:
    """A value to write into a column: ``kind`` says how it is bound.

    ``json`` is JSON text written as it is (PostgreSQL: cast to JSONB, which must parse
    it); ``text``, ``bytes`` and ``int`` are bound as that SQL type (the database may
    convert or refuse); ``null`` is NULL.
    """

    kind: str
    value: Any

    def __repr__(self) -> str:
        shown = repr(self.value)
        return f"Forged({self.kind}, {shown[:80]}{'...' if len(shown) > 80 else ''})"


def sql_value(forged: Forged, backend: str) -> ColumnElement[Any] | None:
    if forged.kind == "null":
        return None
    if forged.kind == "json":
        if backend == "postgres":
            return cast(type_coerce(forged.value, Text), postgresql.JSONB)
        return type_coerce(forged.value, Text)
    sql_type = {"text": Text, "bytes": LargeBinary, "int": BigInteger}[forged.kind]
    return type_coerce(forged.value, sql_type)


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)
DEPTH = st.integers(1, 10_000)
#: Text that text columns of every database take: no NUL, no lone surrogate.
TEXT = st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\x00"), max_size=80)


def _deep(depth: int, kind: str) -> str:
    if kind == "list":
        return "[" * depth + "]" * depth
    return '{"a": ' * depth + "1" + "}" * depth


JSON_TEXT = st.one_of(
    JSON_VALUES.map(lambda v: Forged("json", json.dumps(v))),  # any shape
    st.builds(_deep, DEPTH, st.sampled_from(["list", "dict"])).map(lambda t: Forged("json", t)),
    TEXT.map(lambda t: Forged("json", t)),  # mostly not JSON
    st.sampled_from(["not json", "[1,2]", '{"ch": 5}', "5", '"text"', "null", "1" * 5000]).map(
        lambda t: Forged("json", t)
    ),
    st.binary(max_size=16).map(lambda b: Forged("bytes", b)),
    st.integers().map(lambda n: Forged("int", n % 2**63)),
)
#: value_versions: also {channel: version} of the wrong types or of other channels.
VERSIONS_TEXT = st.one_of(
    JSON_TEXT,
    st.dictionaries(
        st.sampled_from(["small", "big", "ch", "", "\ud800"]), JSON_VALUES, max_size=3
    ).map(lambda d: Forged("json", json.dumps(d))),
)


#: What msgpack holds: JSON values with integers of 64 bits.
MSGPACK_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
    | st.binary(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)


def _msgpack(value: Any) -> bytes:
    return ormsgpack.packb(value)


BYTES = st.one_of(
    st.binary(max_size=64).map(lambda b: Forged("bytes", b)),
    MSGPACK_VALUES.map(lambda v: Forged("bytes", _msgpack(v))),  # msgpack of any shape
    DEPTH.map(lambda d: Forged("bytes", b"\x91" * d + b"\xc0")),  # arrays 10,000 deep
    st.tuples(MSGPACK_VALUES, MSGPACK_VALUES, MSGPACK_VALUES).map(
        lambda t: Forged("bytes", _msgpack([1, [[t[0], t[1], t[2]]]]))  # inline_values-like
    ),
    TEXT.map(lambda t: Forged("text", t)),
    st.integers(-(2**63), 2**63 - 1).map(lambda n: Forged("int", n)),
    st.just(Forged("null", None)),
)
TEXTS = st.one_of(
    TEXT.map(lambda t: Forged("text", t)),
    st.binary(max_size=16).map(lambda b: Forged("bytes", b)),  # not UTF-8, mostly
    st.integers(-(2**63), 2**63 - 1).map(lambda n: Forged("int", n)),
    st.just(Forged("null", None)),
)
INTEGERS = st.one_of(
    st.integers(-(2**63), 2**63 - 1).map(lambda n: Forged("int", n)),
    TEXT.map(lambda t: Forged("text", t)),
    st.binary(max_size=8).map(lambda b: Forged("bytes", b)),
    st.just(Forged("null", None)),
)

#: ``(table, column)``: the strategy of its forged values.
COLUMNS: dict[tuple[str, str], st.SearchStrategy[Forged]] = {
    ("checkpoints", "checkpoint"): BYTES,
    ("checkpoints", "type"): TEXTS,
    ("checkpoints", "metadata"): JSON_TEXT,
    ("checkpoints", "value_versions"): VERSIONS_TEXT,
    ("checkpoints", "inline_values"): BYTES,
    ("checkpoints", "parent_checkpoint_id"): TEXTS,
    ("checkpoints", "source"): TEXTS,
    ("checkpoints", "step"): INTEGERS,
    ("checkpoints", "run_id"): TEXTS,
    ("blobs", "type"): TEXTS,
    ("blobs", "blob"): BYTES,
    ("blobs", "version"): TEXTS,
    ("writes", "type"): TEXTS,
    ("writes", "blob"): BYTES,
    ("writes", "idx"): INTEGERS,
    ("writes", "task_path"): TEXTS,
    ("writes", "channel"): TEXTS,
}
FORGERIES = st.sampled_from(sorted(COLUMNS)).flatmap(lambda tc: st.tuples(st.just(tc), COLUMNS[tc]))
TABLES: dict[str, Table] = {"checkpoints": checkpoints, "blobs": blobs, "writes": writes}
#: Columns no read decodes: the checkpoint reads back exactly as before.
NOT_READ = {"source", "step", "run_id"}

#: About 5 examples a column a backend and door, 10 a backend (LGSA_FORGED_EXAMPLES: examples
#: a backend and door in all; each costs 10-250 ms).
EXAMPLES = int(os.environ.get("LGSA_FORGED_EXAMPLES", 5 * len(COLUMNS)))

# -- the thread ---------------------------------------------------------------------------


@dataclass
class Thread:
    thread_id: str
    made: list[str]  # checkpoint ids, oldest first
    big_versions: list[str]  # the big channel's version of each

    @property
    def middle(self) -> str:
        return self.made[1]


async def make_thread(door: Door) -> Thread:
    """Three checkpoints, each with an inline value, a blob value of a new version and a
    write; metadata names the thread (for filters) and promotes source and step."""
    thread_id = f"forged-rows-{next(_THREADS)}"
    made, versions = [], []
    parent = cfg(thread_id)
    for n in range(3):
        cp, v = make_checkpoint({"small": f"small {n}", "big": f"{n}" * BIG})
        meta = {"n": n, "t": thread_id, "source": "loop", "step": n, "run_id": f"run-{n}"}
        parent = await door.put(parent, cp, meta, v)
        await door.put_writes(parent, [("out", f"write {n}")], "task", "path")
        made.append(cp["id"])
        versions.append(v["big"])
    return Thread(thread_id, made, versions)


def forge(
    door: Door, backend: str, thread: Thread, table_column: tuple[str, str], forged: Forged
) -> bool:
    """Write ``forged`` into the column of the middle checkpoint's row (its checkpoint
    row, its big blob, its write); False when the database refuses the value."""
    table_name, column = table_column
    table = TABLES[table_name]
    where: list[ColumnElement[bool]] = [table.c.thread_id == thread.thread_id]
    if table is blobs:
        where += [blobs.c.channel == "big", blobs.c.version == thread.big_versions[1]]
    else:
        where.append(table.c.checkpoint_id == thread.middle)
    try:
        with raw(door.saver) as conn:
            n = conn.execute(
                update(table).where(*where).values({column: sql_value(forged, backend)})
            ).rowcount
    except (exc.DBAPIError, exc.StatementError):
        return False  # the database refuses it: not forgeable there
    assert n == 1
    return True


def skipped_logged(caplog: pytest.LogCaptureFixture, checkpoint_id: str) -> bool:
    return any(
        r.name == LOGGER and r.levelno == logging.ERROR and checkpoint_id in r.getMessage()
        for r in caplog.records
    )


async def outcome(call: Callable[[], Any], thread: Thread) -> Any:
    """What a read of the forged checkpoint gave: its result, or the
    CheckpointDecodeError (naming the thread) it raised; any other error fails."""
    try:
        return await call()
    except CheckpointDecodeError as e:
        assert e.thread_id == thread.thread_id, e
        return e


def same(a: Any, b: Any) -> bool:
    """Two tuples of an unforged checkpoint are equal."""
    return (a.config, a.checkpoint, a.metadata, a.parent_config, a.pending_writes) == (
        b.config,
        b.checkpoint,
        b.metadata,
        b.parent_config,
        b.pending_writes,
    )


# -- the property ------------------------------------------------------------------------


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
    ],
)
@given(forgery=FORGERIES)
@example(forgery=(("checkpoints", "metadata"), Forged("json", json.dumps("x" * 1_000_000))))
@example(forgery=(("blobs", "blob"), Forged("bytes", b"\xc1" * 1_000_000)))
@example(forgery=(("checkpoints", "value_versions"), Forged("json", "[1,2]")))
@example(forgery=(("checkpoints", "value_versions"), Forged("json", '{"ch": 5}')))
@example(forgery=(("checkpoints", "metadata"), Forged("json", "not json")))
@example(forgery=(("checkpoints", "metadata"), Forged("json", _deep(5000, "list"))))
async def test_reads_survive_a_forged_column(
    door: Door,
    backend: str,
    caplog: pytest.LogCaptureFixture,
    forgery: tuple[tuple[str, str], Forged],
) -> None:
    table_column, forged = forgery
    thread = await make_thread(door)
    first, middle, last = thread.made
    t = thread.thread_id
    before = {c: await door.get_tuple(cfg(t, c)) for c in thread.made}
    if not forge(door, backend, thread, table_column, forged):
        return

    # The forged checkpoint: a tuple or CheckpointDecodeError naming it.
    got = await outcome(lambda: door.get_tuple(cfg(t, middle)), thread)
    if isinstance(got, CheckpointDecodeError):
        assert got.checkpoint_id == middle, got
        assert repr(middle) in str(got) and got.part in str(got)
    else:
        assert got is not None and got.config == before[middle].config
        if table_column[1] in NOT_READ:
            assert same(got, before[middle])

    # The others, by id and as the latest.
    for c in (first, last):
        assert same(await door.get_tuple(cfg(t, c)), before[c])
    assert same(await door.get_tuple(cfg(t)), before[last])

    # Listings: every other checkpoint, the forged one as get_tuple gave it (or logged).
    kept = not isinstance(got, CheckpointDecodeError)
    expect = [last, middle, first] if kept else [last, first]
    caplog.clear()
    with caplog.at_level(logging.ERROR, logger=LOGGER):
        listed = await door.list(cfg(t))
        everything = [
            x for x in await door.list(None) if x.config["configurable"]["thread_id"] == t
        ]
        filtered = await door.list(None, filter={"t": t})
        stepped = await door.list(cfg(t), filter={"step": 0})
        older = await door.list(cfg(t), before=cfg(t, last))
        limited = await door.list(cfg(t), limit=2)
    assert ids(listed) == expect and ids(everything) == expect
    assert ids(filtered) in (expect, [x for x in expect if x != middle])
    assert first in ids(stepped) and last not in ids(stepped)
    assert ids(older) == expect[1:]
    assert ids(limited) == (expect[:2] if kept else [last])
    for listing in (listed, everything):
        by_id = {x.config["configurable"]["checkpoint_id"]: x for x in listing}
        assert same(by_id[first], before[first]) and same(by_id[last], before[last])
        if kept:
            assert by_id[middle].config == got.config
            assert by_id[middle].pending_writes == got.pending_writes
    if not kept:
        assert skipped_logged(caplog, middle), [r.getMessage() for r in caplog.records]

    # A DeltaChannel read through the forged checkpoint (the parent of the last).
    history = await outcome(
        lambda: door.get_delta_channel_history(
            config=cfg(t, last), channels=["small", "big", "out"]
        ),
        thread,
    )
    if not isinstance(history, CheckpointDecodeError):
        assert set(history) == {"small", "big", "out"}

    # A child of the forged checkpoint is stored and read; maintenance runs, and prune
    # keeps what that sane latest checkpoint holds (its blob too).
    cp, v = make_checkpoint({"big": "c" * BIG})
    child = await door.put(cfg(t, middle), cp, {"n": 3}, v)
    child_before = await door.get_tuple(child)
    assert child_before is not None and child_before.checkpoint["channel_values"] == {
        "big": "c" * BIG
    }
    assert any(x.thread_id == t for x in await door.list_threads())
    assert (await door.storage_stats(t))["lgsa_checkpoints"]["rows"] == 4
    await door.prune([t])
    assert same(await door.get_tuple(child), child_before)
    assert same(await door.get_tuple(cfg(t)), child_before)
    # Gone with its thread (the next examples' list(None) stays small).
    await door.delete_thread(t)
    assert (
        await door.list(cfg(t)) == []
        and (await door.storage_stats(t))["lgsa_checkpoints"]["rows"] == 0
    )


# -- forged rows found by a hostile review, as they were reported -------------------------

FINDINGS = {
    "value_versions-list": ("value_versions", "[1,2]"),
    "value_versions-int-version": ("value_versions", '{"ch": 5}'),
    "metadata-not-json": ("metadata", "not json"),
    "metadata-5000-deep": ("metadata", _deep(5000, "list")),
}


@pytest.mark.parametrize("finding", list(FINDINGS))
async def test_reported_forgeries_raise_decode_error_and_list_skips_them(
    door: Door, backend: str, caplog: pytest.LogCaptureFixture, finding: str
) -> None:
    """The reported rows: they made ``list(None)`` and ``get_tuple`` raise
    ``AttributeError``, ``DataError``, ``JSONDecodeError`` or ``RecursionError``."""
    column, text = FINDINGS[finding]
    thread = await make_thread(door)
    first, middle, last = thread.made
    t = thread.thread_id
    if not forge(door, backend, thread, ("checkpoints", column), Forged("json", text)):
        pytest.skip(f"{backend} does not store {text[:20]!r} in a JSON column")
    with pytest.raises(CheckpointDecodeError) as info:
        await door.get_tuple(cfg(t, middle))
    assert (info.value.thread_id, info.value.checkpoint_id, info.value.part) == (t, middle, column)
    caplog.clear()
    with caplog.at_level(logging.ERROR, logger=LOGGER):
        assert ids(await door.list(None)) == [last, first]
        assert ids(await door.list(cfg(t))) == [last, first]
    assert skipped_logged(caplog, middle)
    # A DeltaChannel walk through it names it (a walk reads no metadata); maintenance
    # treats it as holding nothing.
    if column == "value_versions":
        with pytest.raises(CheckpointDecodeError) as info:
            await door.get_delta_channel_history(config=cfg(t, last), channels=["big"])
        assert (info.value.checkpoint_id, info.value.part) == (middle, column)
    else:
        history = await door.get_delta_channel_history(config=cfg(t, last), channels=["big"])
        assert history["big"]["seed"] == "1" * BIG
    await door.prune([t])
    latest = await door.get_tuple(cfg(t))
    assert latest is not None and latest.checkpoint["id"] == last
