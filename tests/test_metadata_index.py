"""Indexed metadata filters (issue 16): the index changes which rows are read, never
which rows are listed.

On every backend, sync and async: a filter on an indexed key lists exactly what the same
filter lists by a scan (a saver on the same tables that reads no index row: :func:`scanning`),
for values of every JSON kind and their near misses; the index follows ``copy_thread``,
``prune``, ``delete_thread`` and ``delete_for_runs``; ``reindex_metadata`` indexes a key
added later. Plans: tests/test_plans.py.
"""

from __future__ import annotations

from typing import Any

import pytest
from langgraph.checkpoint.base import empty_checkpoint
from sqlalchemy import func, select

from langgraph.checkpoint.sqlalchemy import SQLAlchemySaver
from langgraph.checkpoint.sqlalchemy._metaindex import index_value
from langgraph.checkpoint.sqlalchemy.schema import metadata_index

from .doors import Door
from .test_forged import raw
from .test_hostile import cfg

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


async def test_step_and_source_indexed_on_request(saver: SQLAlchemySaver, door: Door) -> None:
    """``step`` and ``source`` (promoted columns, indexed by default on PostgreSQL only
    since 0008) go through the metadata index when ``metadata_index_keys`` lists them,
    with the same matches as the columns alone, whatever the stored value's type."""
    steps: list[Any] = [1, 2, 2.0, -1, 10_000, "2", True, None, [2]]
    sources: list[Any] = ["loop", "input", "Loop", "", 1, None]
    for i, (step, source) in enumerate(zip(steps * 2, sources * 3, strict=False)):
        cp = empty_checkpoint()
        await door.put(cfg(f"t{i}"), cp, {"step": step, "source": source}, {})
    indexing = twin(saver, metadata_index_keys=["step", "source"])
    await Door(indexing, door.mode).reindex_metadata()
    scan = scanning(saver)
    for flt in [
        *({"step": v} for v in [*steps, 2.5, 0]),
        *({"source": v} for v in [*sources, "update"]),
        {"step": 2, "source": "input"},
        {"step": 10_000, "source": "loop"},
    ]:
        assert listed(indexing, flt) == listed(scan, flt), flt
    assert len(listed(indexing, {"step": 2})) == 4  # 2 and 2.0, twice each
    if saver._qb.metadata_index_rows:
        assert index_rows(saver) > 0


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
    with SQLAlchemySaver.from_conn_string(url, metadata_index_keys=["tenant"]) as saver:
        assert saver._st.indexed_keys is not None
        assert [
            t.config["configurable"]["thread_id"]
            for t in saver.list(None, filter={"tenant": "acme"})
        ] == ["a"]
        assert index_rows(saver) == 1
