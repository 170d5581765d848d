"""Indexed metadata filters: the index changes which rows are read, never
which rows are listed.

On every backend, sync and async: a filter on an indexed key lists exactly what the same
filter lists by a scan (a saver on the same tables that reads no index row: :func:`scanning`),
for values of every JSON kind and their near misses; the index follows ``copy_thread``,
``prune``, ``delete_thread`` and ``delete_for_runs``; ``reindex_metadata`` indexes a key
added later. Plans: tests/dialects/test_plans.py.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest
from langgraph.checkpoint.base import empty_checkpoint
from sqlalchemy import func, select, update

from langgraph.checkpoint.sqlalchemy import SQLAlchemySaver
from langgraph.checkpoint.sqlalchemy._codec.metakeys import index_value
from langgraph.checkpoint.sqlalchemy.schema import metadata_index

from ..doors import Door
from ..security.test_forged import raw
from ..security.test_hostile import cfg

# Stored values of "user_id", one checkpoint each, and filters that must or must not
# find them: every JSON kind, numbers in both forms, near misses, a long value (digest).
LONG = "u" * 300
STORED: list[Any] = [
    "u1",
    "U1",
    "u1 ",
    "",
    1,
    2.0,
    2**60,
    True,
    False,
    None,
    [1, 2],
    [2, 1],
    {"a": 1, "b": [1.0]},
    LONG,
    "x\u00e9\U0001f600",
]
FILTERS: list[Any] = [
    *STORED,
    1.0,
    2,
    "1",
    0,
    [1],
    {"b": [1], "a": 1.0},
    LONG + "v",
    "nobody",
]


def twin(saver: SQLAlchemySaver, **kwargs: Any) -> SQLAlchemySaver:
    """A saver on the same engines and tables with other options."""
    return SQLAlchemySaver(saver.engine, saver.async_engine, schema=saver.schema, **kwargs)


def scanning(saver: SQLAlchemySaver) -> SQLAlchemySaver:
    """A saver on the same tables whose filters never read the metadata index (as if no
    key were complete): the reference the indexed filters must agree with."""
    scan = twin(saver)
    scan._st._registered = frozenset()
    return scan


async def store(door: Door, thread: str, meta: dict[str, Any], ns: str = "") -> str:
    cp = empty_checkpoint()
    await door.put(cfg(thread, ns=ns), cp, {"source": "loop", "step": 1, **meta}, {})
    return str(cp["id"])


def listed(
    saver: SQLAlchemySaver, flt: dict[str, Any], config: Any = None
) -> list[tuple[str, str]]:
    return [
        (t.config["configurable"]["thread_id"], t.config["configurable"]["checkpoint_id"])
        for t in saver.list(config, filter=flt)
    ]


def index_rows(saver: SQLAlchemySaver) -> int:
    with raw(saver) as conn:
        return int(conn.execute(select(func.count()).select_from(metadata_index)).scalar() or 0)


def test_index_values_meet_where_json_values_do() -> None:
    assert index_value(1) == index_value(1.0) != index_value(True)
    assert index_value("1") != index_value(1)
    assert index_value(None) != index_value("null")
    assert index_value([1]) == index_value({"a": 2})  # containers share one, rechecked
    assert index_value(LONG).startswith("h:") and len(index_value(LONG)) <= 100
    assert index_value(2**2000) == index_value(2**2001)  # beyond a double: one bucket


async def test_indexed_filter_lists_what_a_scan_lists(saver: SQLAlchemySaver, door: Door) -> None:
    for i, value in enumerate(STORED):
        await store(door, f"t{i}", {"user_id": value, "graph_id": f"g{i % 3}"})
        await store(door, f"t{i}", {"user_id": value}, ns="sub:1")
    scan = scanning(saver)
    if saver._qb.metadata_index_rows:
        assert index_rows(saver) == 2 * len(STORED) + len(STORED)  # user_id x2, graph_id
    for value in FILTERS:
        for flt in ({"user_id": value}, {"user_id": value, "graph_id": "g1"}):
            want = listed(scan, flt)
            assert listed(saver, flt) == want, flt
            assert [
                (t.config["configurable"]["thread_id"], t.config["configurable"]["checkpoint_id"])
                for t in await door.list(None, filter=flt)
            ] == want
        if value in STORED[:3]:
            assert len(listed(saver, {"user_id": value})) == 2
    assert listed(saver, {"user_id": "u1"}, cfg("t0")) == listed(scan, {"user_id": "u1"}, cfg("t0"))
    assert listed(saver, {"user_id": "u1"}, cfg("t1")) == []
    assert listed(saver, {"run_id": "r1"}) == []


async def test_zero_and_minus_zero_meet_through_the_index(
    saver: SQLAlchemySaver, door: Door
) -> None:
    """``-0.0`` and ``0`` are one JSON number, which the scan matches alike, so the
    metadata index must not tell them apart (its value was ``n:-0.0`` against ``n:0.0``:
    ``{"user_id": 0}`` missed the ``-0.0`` checkpoints; from the hostile review). Rows
    written before keep ``n:-0.0``, which a filter on zero reads too."""
    for i, zero in enumerate([0, -0.0, 0.0]):
        await store(door, f"t{i}", {"user_id": zero})
    if saver._qb.metadata_index_rows:  # a row as the index wrote -0.0 before the fix
        with raw(saver) as conn:
            conn.execute(
                update(metadata_index)
                .where(metadata_index.c.thread_id == "t1")
                .values(value="n:-0.0")
            )
    scan = scanning(saver)
    for value in (0, -0.0, 0.0):
        want = listed(scan, {"user_id": value})
        assert len(want) == 3, value
        assert listed(saver, {"user_id": value}) == want, value


async def test_index_follows_copy_prune_and_deletes(saver: SQLAlchemySaver, door: Door) -> None:
    first = await store(door, "src", {"user_id": "alice", "run_id": "r1"})
    await store(door, "src", {"user_id": "alice", "run_id": "r2"})
    await door.copy_thread("src", "dst")
    assert {t for t, _ in listed(saver, {"user_id": "alice"})} == {"src", "dst"}
    await door.prune(["dst"], strategy="keep_latest")
    assert [t for t, _ in listed(saver, {"user_id": "alice"})].count("dst") == 1
    await door.delete_for_runs(["r1"])
    assert first not in {c for _, c in listed(saver, {"user_id": "alice"})}
    assert listed(saver, {"run_id": "r2"}) == listed(scanning(saver), {"run_id": "r2"})
    await door.delete_thread("src")
    await door.delete_thread("dst")
    assert listed(saver, {"user_id": "alice"}) == []
    assert index_rows(saver) == 0  # no row left behind (PostgreSQL keeps none)


async def test_reindex_makes_a_new_key_indexed(saver: SQLAlchemySaver, door: Door) -> None:
    await store(door, "a", {"tenant": "acme"})
    await store(door, "b", {"tenant": "other"})
    before = index_rows(saver)
    wider = twin(saver, metadata_index_keys=["tenant", "user_id"])
    done = await Door(wider, door.mode).reindex_metadata()
    assert done == (["tenant"] if saver._qb.metadata_index_rows else [])
    assert "user_id" in wider._codec.index_keys  # the defaults stay indexed
    assert await Door(wider, door.mode).reindex_metadata() == []  # once
    fresh = twin(saver, metadata_index_keys=["tenant"])
    assert [t for t, _ in listed(fresh, {"tenant": "acme"})] == ["a"]
    if saver._qb.metadata_index_rows:
        assert index_rows(saver) == before + 2


def scan_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == "langgraph.checkpoint.sqlalchemy" and "no index serves" in r.getMessage()
    ]


async def test_an_unindexed_filter_across_threads_is_logged_once_per_key(
    saver: SQLAlchemySaver, door: Door, caplog: pytest.LogCaptureFixture
) -> None:
    """A filter across threads that no index serves (SQLite, MySQL/MariaDB: a key
    outside ``metadata_index_keys``; a documented scan) logs one warning per key and
    saver, naming the key and the way to index it. None where an index serves the
    filter (an indexed key among its keys, ``run_id``, PostgreSQL's GIN index for every
    key), within one thread (bounded by the thread), or for ``step``/``source`` alone."""
    await store(door, "a", {"tenant": "acme", "user_id": "u1"})
    caplog.set_level(logging.WARNING, logger="langgraph.checkpoint.sqlalchemy")
    for _ in range(3):
        assert len(await door.list(None, filter={"tenant": "acme"})) == 1
        assert await door.list(None, filter={"tenant": "x", "region": "eu"}) == []
    assert len(await door.list(None, filter={"user_id": "u1", "tenant": "acme"})) == 1
    assert await door.list(None, filter={"run_id": "r1", "other": 1}) == []
    assert await door.list(cfg("a"), filter={"other": 1}) == []
    assert len(await door.list(None, filter={"step": 1, "source": "loop"})) == 1
    warned = scan_warnings(caplog)
    if not saver._qb.metadata_index_rows:  # PostgreSQL: the GIN index serves every key
        assert warned == []
        return
    assert len(warned) == 2, warned
    assert "'tenant'" in warned[0] and "'region'" in warned[1]
    assert all("metadata_index_keys" in w and "reindex_metadata()" in w for w in warned)
    caplog.clear()
    other = twin(saver)  # once per saver: another saver warns again
    assert len(await Door(other, door.mode).list(None, filter={"tenant": "acme"})) == 1
    assert len(scan_warnings(caplog)) == 1
    caplog.clear()
    configured = twin(saver, metadata_index_keys=["tenant"])  # not reindexed yet
    assert len(await Door(configured, door.mode).list(None, filter={"tenant": "acme"})) == 1
    (message,) = scan_warnings(caplog)
    assert "'tenant'" in message and "run reindex_metadata()" in message
    caplog.clear()
    await Door(configured, door.mode).reindex_metadata()
    indexed = twin(saver, metadata_index_keys=["tenant"])
    assert len(await Door(indexed, door.mode).list(None, filter={"tenant": "acme"})) == 1
    assert scan_warnings(caplog) == []


def test_bad_index_keys_are_refused() -> None:
    for bad, error in ((["x" * 41], ValueError), ([""], ValueError), ("user_id", TypeError)):
        with pytest.raises(error):
            SQLAlchemySaver.from_conn_string(":memory:", metadata_index_keys=bad)


def test_cli_reindexes_a_key(tmp_path: Any) -> None:
    from langgraph.checkpoint.sqlalchemy import cli

    url = f"sqlite:///{tmp_path / 'cli.sqlite'}"
    with SQLAlchemySaver.from_conn_string(url) as saver:
        saver.setup()
        saver.put(cfg("a"), empty_checkpoint(), {"tenant": "acme"}, {})
    assert cli.main(["reindex-metadata", "tenant", "--url", url]) == 0
    assert cli.main(["reindex-metadata", "tenant", "--url", url]) == 0  # nothing left
    assert cli.main(["reindex-metadata", "step", "--url", url]) == 2  # a column of its own
    with SQLAlchemySaver.from_conn_string(url, metadata_index_keys=["tenant"]) as saver:
        assert saver._st.indexed_keys is not None
        assert [
            t.config["configurable"]["thread_id"]
            for t in saver.list(None, filter={"tenant": "acme"})
        ] == ["a"]
        assert index_rows(saver) == 1


def test_cli_import_writes_the_registered_keys(tmp_path: Any) -> None:
    """The command line's ``import`` (like ``copy``) builds its saver with the default
    ``metadata_index_keys``: into a store where another key is registered, its
    checkpoints had no index rows for it, and filters through the index missed them
    (from the hostile review). ``setup()`` now adopts every registered key."""
    from langgraph.checkpoint.sqlalchemy import cli

    src, dst = (f"sqlite:///{tmp_path / name}" for name in ("src.sqlite", "dst.sqlite"))
    meta = {"source": "fork", "step": 7, "tenant": "acme"}
    with SQLAlchemySaver.from_conn_string(src) as saver:
        saver.setup()
        saver.put(cfg("imported"), empty_checkpoint(), meta, {})
    with SQLAlchemySaver.from_conn_string(dst, metadata_index_keys=["tenant"]) as saver:
        saver.setup()
        assert saver.reindex_metadata() == ["tenant"]
    dump = str(tmp_path / "dump.jsonl")
    assert cli.main(["export", "imported", "-o", dump, "--url", src]) == 0
    assert cli.main(["import", dump, "--url", dst, "--yes"]) == 0
    with SQLAlchemySaver.from_conn_string(dst, metadata_index_keys=["tenant"]) as saver:
        for key, value in meta.items():
            want = listed(scanning(saver), {key: value})
            assert want == listed(saver, {key: value}) != [], key
        assert index_rows(saver) == 1  # tenant's


async def test_setup_adopts_registered_keys(saver: SQLAlchemySaver, door: Door) -> None:
    """A saver whose ``metadata_index_keys`` lacks a key that another process registered
    writes its index rows anyway once ``setup()`` ran: the index stays complete."""
    wider = twin(saver, metadata_index_keys=["tenant"])
    await Door(wider, door.mode).reindex_metadata()
    plain = twin(saver)
    await Door(plain, door.mode).setup()
    await Door(plain, door.mode).put(cfg("late"), empty_checkpoint(), {"tenant": "zeta"}, {})
    assert [t for t, _ in listed(wider, {"tenant": "zeta"})] == ["late"]
    if saver._qb.metadata_index_rows:
        assert "tenant" in plain._codec.index_keys
