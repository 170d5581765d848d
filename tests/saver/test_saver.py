"""The saver's own behaviour, method by method, through the ``door`` fixture.

Every test runs on each backend (SQLite file, SQLite in-memory, PostgreSQL) through the
sync and the async methods. Checkpoints are built the way LangGraph builds them
(``empty_checkpoint`` / ``create_checkpoint`` and ``saver.get_next_version``).
"""

from __future__ import annotations

import asyncio
import datetime
import decimal
import itertools
import uuid
from typing import Any

import pytest
from langgraph.checkpoint.base import (
    writes_sort_key,
)
from sqlalchemy import func, select

from langgraph.checkpoint.sqlalchemy import (
    CheckpointConfigError,
    CheckpointMetadataError,
    SQLAlchemySaver,
)
from langgraph.checkpoint.sqlalchemy.schema import (
    THREAD_ID_MAX_LENGTH,
    blobs,
    checkpoints,
    writes,
)

from ..checkpoints import config as cfg
from ..checkpoints import next_checkpoint
from ..doors import Door

# -- helpers -----------------------------------------------------------------------------


def stored(thread_id: str, checkpoint_id: str, ns: str = "") -> dict[str, Any]:
    """The config the saver returns for a stored checkpoint."""
    return {
        "configurable": {
            "thread_id": thread_id,
            "checkpoint_ns": ns,
            "checkpoint_id": checkpoint_id,
        }
    }


async def put_chain(
    door: Any,
    thread_id: str,
    n: int,
    ns: str = "",
    metadata: Any = None,
) -> list[dict[str, Any]]:
    """Store ``n`` checkpoints, each the child of the previous one; return their configs."""
    configs: list[dict[str, Any]] = []
    parent = cfg(thread_id, ns=ns)
    prev = None
    for i in range(n):
        prev, new_versions = next_checkpoint(door.saver, prev, {"counter": i}, step=i)
        meta = metadata(i) if callable(metadata) else {"source": "loop", "step": i}
        parent = await door.put(parent, prev, meta, new_versions)
        configs.append(parent)
    return configs


def count_rows(saver: Any, table: Any, **where: Any) -> int:
    """Rows of ``table`` (in the saver's schema) matching the column equalities."""
    engine = saver.engine
    if saver.schema:
        engine = engine.execution_options(schema_translate_map={None: saver.schema})
    stmt = select(func.count()).select_from(table)
    for column, value in where.items():
        stmt = stmt.where(table.c[column] == value)
    with engine.connect() as conn:
        return int(conn.execute(stmt).scalar_one())


def ids(tuples: list[Any]) -> list[str]:
    return [t.config["configurable"]["checkpoint_id"] for t in tuples]


def cid(config: dict[str, Any]) -> str:
    return str(config["configurable"]["checkpoint_id"])


# -- put / get_tuple ---------------------------------------------------------------------

CHANNEL_VALUES: dict[str, Any] = {
    "text": "héllo wörld 😀 \"quoted\" 'single' \\ back\nslash",
    "empty_text": "",
    "int": 2**62,
    "negative": -7,
    "float": 1.5,
    "bool": False,
    "none": None,
    "bytes": b"\x00\xff\x10binary",
    "empty_bytes": b"",
    "list": [1, "a", None, [2.5, {"x": True}]],
    "dict": {"nested": {"deep": [1, 2, 3]}, "unicode": "ü"},
    "set": {1, 2, 3},
    "datetime": datetime.datetime(2024, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc),
    "uuid": uuid.UUID(int=12345),
    "decimal": decimal.Decimal("1.10"),
    "large": "x" * 200_000,
}


async def test_put_get_tuple_round_trip(door: Any) -> None:
    saver = door.saver
    first, v1 = next_checkpoint(saver, None, CHANNEL_VALUES, step=-1)
    meta1 = {"source": "input", "step": -1, "parents": {}, "extra": {"a": [1, 2]}}
    config1 = await door.put(cfg("t1"), first, meta1, v1)
    assert config1 == stored("t1", first["id"])

    got = await door.get_tuple(config1)
    assert got is not None
    assert got.config == stored("t1", first["id"])
    assert got.parent_config is None
    assert got.metadata == meta1
    assert got.pending_writes == []
    assert got.checkpoint["id"] == first["id"]
    assert got.checkpoint["ts"] == first["ts"]
    assert got.checkpoint["channel_versions"] == first["channel_versions"]
    assert got.checkpoint["versions_seen"] == first["versions_seen"]
    assert got.checkpoint["channel_values"] == CHANNEL_VALUES
    for name, value in CHANNEL_VALUES.items():
        assert type(got.checkpoint["channel_values"][name]) is type(value), name

    second, v2 = next_checkpoint(saver, first, {"int": 3}, step=0)
    config2 = await door.put(config1, second, {"source": "loop", "step": 0}, v2)
    assert config2 == stored("t1", second["id"])
    got2 = await door.get_tuple(config2)
    assert got2 is not None
    assert got2.config == config2
    assert got2.parent_config == config1
    assert got2.checkpoint["channel_values"] == {**CHANNEL_VALUES, "int": 3}
    # the first checkpoint still has its own values
    got1 = await door.get_tuple(config1)
    assert got1 is not None and got1.checkpoint["channel_values"]["int"] == 2**62


async def test_get_tuple_of_missing_checkpoint_is_none(door: Any) -> None:
    assert await door.get_tuple(cfg("nothing")) is None
    await put_chain(door, "t", 1)
    assert await door.get_tuple(cfg("t", checkpoint_id="no-such-id")) is None
    assert await door.get_tuple(cfg("t", ns="other-ns")) is None


async def test_latest_is_newest_and_empty_id_means_latest(door: Any) -> None:
    configs = await put_chain(door, "t", 4)
    latest = cid(configs[-1])
    for config in (
        cfg("t"),
        cfg("t", ns=""),
        {"configurable": {"thread_id": "t", "checkpoint_id": ""}},
        {"configurable": {"thread_id": "t", "checkpoint_id": None}},
        {"configurable": {"thread_id": "t", "checkpoint_ns": "", "checkpoint_id": ""}},
    ):
        got = await door.get_tuple(config)
        assert got is not None, config
        assert cid(got.config) == latest, config
        assert got.checkpoint["channel_values"] == {"counter": 3}
    # an explicit id still gives that checkpoint
    got = await door.get_tuple(configs[1])
    assert got is not None and got.checkpoint["channel_values"] == {"counter": 1}


async def test_absent_namespace_is_the_root_namespace(door: Any) -> None:
    saver = door.saver
    checkpoint, versions = next_checkpoint(saver, None, {"a": 1})
    # put without checkpoint_ns, read with "" (and the other way round)
    config = await door.put(cfg("t"), checkpoint, {}, versions)
    assert config["configurable"]["checkpoint_ns"] == ""
    got = await door.get_tuple(cfg("t", checkpoint_id=checkpoint["id"], ns=""))
    assert got is not None and got.checkpoint["channel_values"] == {"a": 1}

    other, versions = next_checkpoint(saver, None, {"b": 2})
    await door.put(cfg("u", ns=""), other, {}, versions)
    got = await door.get_tuple(cfg("u", checkpoint_id=other["id"]))
    assert got is not None and got.checkpoint["channel_values"] == {"b": 2}
    await door.put_writes(cfg("u", checkpoint_id=other["id"]), [("b", 3)], "task")
    got = await door.get_tuple(cfg("u", ns=""))
    assert got is not None and got.pending_writes == [("task", "b", 3)]


async def test_namespaces_are_separate(door: Any) -> None:
    root = await put_chain(door, "t", 2)
    child = await put_chain(door, "t", 3, ns="child:1")
    got = await door.get_tuple(cfg("t"))
    assert got is not None and got.config == root[-1]
    got = await door.get_tuple(cfg("t", ns="child:1"))
    assert got is not None and got.config == child[-1]
    assert got.config["configurable"]["checkpoint_ns"] == "child:1"
    assert got.parent_config == child[-2]


async def test_mutating_callers_dicts_after_put_changes_nothing(door: Any) -> None:
    saver = door.saver
    checkpoint, versions = next_checkpoint(saver, None, {"items": [1, 2], "obj": {"k": "v"}})
    metadata: dict[str, Any] = {"source": "input", "step": -1, "tags": ["a"]}
    config = cfg("t")
    returned = await door.put(config, checkpoint, metadata, versions)

    checkpoint["channel_values"]["items"].append(3)
    checkpoint["channel_values"]["obj"]["k"] = "changed"
    checkpoint["channel_values"]["new"] = "added"
    checkpoint["channel_versions"]["new"] = "9"
    checkpoint["id"] = "changed-id"
    metadata["tags"].append("b")
    metadata["step"] = 99
    versions["items"] = "changed"
    config["configurable"]["thread_id"] = "other"
    returned_copy = {"configurable": dict(returned["configurable"])}

    got = await door.get_tuple(returned_copy)
    assert got is not None
    assert got.checkpoint["channel_values"] == {"items": [1, 2], "obj": {"k": "v"}}
    assert set(got.checkpoint["channel_versions"]) == {"items", "obj"}
    assert got.metadata == {"source": "input", "step": -1, "tags": ["a"]}
    assert got.config["configurable"]["thread_id"] == "t"

    # and mutating a returned tuple does not change the next read either
    got.checkpoint["channel_values"]["items"].append(4)
    got.metadata["step"] = 5
    again = await door.get_tuple(returned_copy)
    assert again is not None
    assert again.checkpoint["channel_values"]["items"] == [1, 2]
    assert again.metadata["step"] == -1


async def test_unchanged_channel_is_returned_and_stored_once(door: Any) -> None:
    saver = door.saver
    big = "B" * 100_000  # over the inline limit: in the blobs table
    first, v1 = next_checkpoint(saver, None, {"big": big, "small": 1})
    c1 = await door.put(cfg("t"), first, {}, v1)
    second, v2 = next_checkpoint(saver, first, {"small": 2})
    assert set(v2) == {"small"}
    assert second["channel_versions"]["big"] == first["channel_versions"]["big"]
    c2 = await door.put(c1, second, {}, v2)
    third, v3 = next_checkpoint(saver, second, {"small": 3})
    await door.put(c2, third, {}, v3)

    got = await door.get_tuple(c2)
    assert got is not None
    assert got.checkpoint["channel_values"] == {"big": big, "small": 2}
    latest = await door.get_tuple(cfg("t"))
    assert latest is not None
    assert latest.checkpoint["channel_values"] == {"big": big, "small": 3}
    listed = await door.list(cfg("t"))
    assert [t.checkpoint["channel_values"]["big"] for t in listed] == [big] * 3

    # the large value once, the small ones in their checkpoints' rows
    assert count_rows(saver, blobs, thread_id="t", channel="big") == 1
    assert count_rows(saver, blobs) == 1


async def test_small_values_are_stored_in_the_checkpoint_row(door: Any) -> None:
    saver = door.saver
    checkpoint, versions = next_checkpoint(saver, None, {"msgs": ["m" * 200] * 20, "n": 1})
    config = await door.put(cfg("t"), checkpoint, {}, versions)
    assert count_rows(saver, blobs) == 0
    got = await door.get_tuple(config)
    assert got is not None
    assert got.checkpoint["channel_values"] == {"msgs": ["m" * 200] * 20, "n": 1}


@pytest.mark.saver_kwargs(inline_limit=0)
async def test_inline_limit_0_stores_every_value_in_the_blobs_table(door: Any) -> None:
    saver = door.saver
    checkpoint, versions = next_checkpoint(saver, None, {"a": 1, "b": "x"})
    config = await door.put(cfg("t"), checkpoint, {}, versions)
    assert count_rows(saver, blobs) == 2
    got = await door.get_tuple(config)
    assert got is not None
    assert got.checkpoint["channel_values"] == {"a": 1, "b": "x"}


async def test_lowering_inline_limit_keeps_unchanged_values(door: Any, saver_factory: Any) -> None:
    # A value stored inline by one saver, then carried unchanged by a saver that would
    # not inline it, must still be found: it goes to the blobs table then.
    saver = door.saver
    first, v1 = next_checkpoint(saver, None, {"doc": "D" * 5000, "n": 1})
    c1 = await door.put(cfg("t"), first, {}, v1)
    assert count_rows(saver, blobs) == 0
    strict = Door(saver_factory(shared=True, inline_limit=100), door.mode)
    second, v2 = next_checkpoint(saver, first, {"n": 2})
    c2 = await strict.put(c1, second, {}, v2)
    for reader in (door, strict):
        got = await reader.get_tuple(c2)
        assert got is not None
        assert got.checkpoint["channel_values"] == {"doc": "D" * 5000, "n": 2}
    assert count_rows(saver, blobs, channel="doc") == 1


def test_inline_limit_out_of_range_is_refused() -> None:
    for bad in (-1, 16 * 1024 + 1, "10"):
        with pytest.raises(ValueError, match="inline_limit"):
            SQLAlchemySaver.from_conn_string(":memory:", inline_limit=bad)


async def test_channel_in_versions_but_not_in_values_is_absent(door: Any) -> None:
    # A channel that has a version but no value (e.g. emptied) comes back absent.
    saver = door.saver
    checkpoint, versions = next_checkpoint(saver, None, {"a": 1, "b": 2})
    del checkpoint["channel_values"]["b"]
    config = await door.put(cfg("t"), checkpoint, {}, versions)
    got = await door.get_tuple(config)
    assert got is not None
    assert got.checkpoint["channel_values"] == {"a": 1}
    assert set(got.checkpoint["channel_versions"]) == {"a", "b"}


async def test_putting_same_checkpoint_id_twice_keeps_last(door: Any) -> None:
    saver = door.saver
    checkpoint, versions = next_checkpoint(saver, None, {"a": 1})
    await door.put(cfg("t"), checkpoint, {"source": "input", "step": -1}, versions)
    await door.put(cfg("t"), checkpoint, {"source": "loop", "step": 0}, versions)
    listed = await door.list(cfg("t"))
    assert len(listed) == 1
    assert listed[0].metadata == {"source": "loop", "step": 0}


# -- put_writes --------------------------------------------------------------------------


async def test_regular_writes_are_first_write_wins(door: Any) -> None:
    [config] = await put_chain(door, "t", 1)
    await door.put_writes(config, [("a", 1), ("b", {"x": 2})], "task-1")
    await door.put_writes(config, [("a", 10), ("b", 20)], "task-1")
    await door.put_writes(config, [("c", 30)], "task-1")  # same (task, idx 0) as ("a", 1)
    got = await door.get_tuple(config)
    assert got is not None
    assert got.pending_writes == [("task-1", "a", 1), ("task-1", "b", {"x": 2})]
    assert count_rows(door.saver, writes, thread_id="t") == 2


async def test_special_channel_batches_replace(door: Any) -> None:
    [config] = await put_chain(door, "t", 1)
    await door.put_writes(config, [("__error__", "first error")], "task-e")
    await door.put_writes(config, [("__error__", "second error")], "task-e")
    await door.put_writes(config, [("__interrupt__", ["ask 1"])], "task-i")
    await door.put_writes(config, [("__interrupt__", ["ask 2"])], "task-i")
    got = await door.get_tuple(config)
    assert got is not None
    assert sorted(got.pending_writes) == [
        ("task-e", "__error__", "second error"),
        ("task-i", "__interrupt__", ["ask 2"]),
    ]
    assert count_rows(door.saver, writes, thread_id="t") == 2


async def test_special_write_next_to_regular_writes_of_same_task(door: Any) -> None:
    [config] = await put_chain(door, "t", 1)
    await door.put_writes(config, [("a", 1), ("b", 2)], "task")
    await door.put_writes(config, [("__error__", "boom")], "task")
    await door.put_writes(config, [("__error__", "boom again")], "task")
    got = await door.get_tuple(config)
    assert got is not None
    # idx: __error__ is -1, regular writes 0, 1 (writes_sort_key order)
    assert got.pending_writes == [
        ("task", "__error__", "boom again"),
        ("task", "a", 1),
        ("task", "b", 2),
    ]


async def test_pending_writes_are_ordered_by_writes_sort_key(door: Any) -> None:
    [config] = await put_chain(door, "t", 1)
    # (task_path, task_id, writes) put in an order that is none of the sort orders
    batches = [
        ("~__pregel_pull, node_b", "task-a", [("x", "b0"), ("y", "b1")]),
        ("~__pregel_push, ('~__pregel_pull', 'fan'), 1, False", "task-0", [("x", "p1")]),
        ("~__pregel_pull, node_a", "task-z", [("x", "a0"), ("y", "a1"), ("z", "a2")]),
        ("~__pregel_push, ('~__pregel_pull', 'fan'), 0, False", "task-9", [("x", "p0")]),
        ("", "task-m", [("x", "m0")]),
        ("~__pregel_pull, node_a", "task-b", [("__interrupt__", "i")]),
    ]
    expected_keyed = []
    for task_path, task_id, batch in batches:
        await door.put_writes(config, batch, task_id, task_path)
        for i, (channel, value) in enumerate(batch):
            idx = {"__interrupt__": -3}.get(channel, i)
            expected_keyed.append(
                (writes_sort_key(task_path, task_id, idx), task_id, channel, value)
            )
    expected = [(t, c, v) for _, t, c, v in sorted(expected_keyed)]

    got = await door.get_tuple(config)
    assert got is not None
    assert got.pending_writes == expected
    [listed] = await door.list(cfg("t"))
    assert listed.pending_writes == expected


async def test_writes_before_their_checkpoint_are_accepted(door: Any) -> None:
    saver = door.saver
    checkpoint, versions = next_checkpoint(saver, None, {"a": 1})
    future = cfg("t", checkpoint_id=checkpoint["id"], ns="")
    await door.put_writes(future, [("a", 2)], "early-task", "path")
    assert await door.get_tuple(cfg("t")) is None
    await door.put(cfg("t"), checkpoint, {}, versions)
    got = await door.get_tuple(cfg("t"))
    assert got is not None
    assert got.pending_writes == [("early-task", "a", 2)]


async def test_writes_belong_to_their_checkpoint_only(door: Any) -> None:
    configs = await put_chain(door, "t", 3)
    await door.put_writes(configs[1], [("a", "for 1")], "task")
    got = await door.get_tuple(cfg("t"))
    assert got is not None and got.pending_writes == []
    got = await door.get_tuple(configs[1])
    assert got is not None and got.pending_writes == [("task", "a", "for 1")]
    listed = {cid(t.config): t.pending_writes for t in await door.list(cfg("t"))}
    assert listed == {
        cid(configs[0]): [],
        cid(configs[1]): [("task", "a", "for 1")],
        cid(configs[2]): [],
    }


async def test_put_writes_without_checkpoint_id_is_rejected(door: Any) -> None:
    with pytest.raises(CheckpointConfigError):
        await door.put_writes(cfg("t"), [("a", 1)], "task")


# -- list --------------------------------------------------------------------------------


async def test_list_threads_and_namespaces(door: Any) -> None:
    t1_root = await put_chain(door, "t1", 3)
    t1_child = await put_chain(door, "t1", 2, ns="child:1")
    t2_root = await put_chain(door, "t2", 2)
    everything = t1_root + t1_child + t2_root

    def newest_first(configs: list[dict[str, Any]]) -> list[str]:
        return sorted((cid(c) for c in configs), reverse=True)

    all_listed = await door.list(None)
    assert ids(all_listed) == newest_first(everything)
    assert {t.config["configurable"]["thread_id"] for t in all_listed} == {"t1", "t2"}

    thread = await door.list(cfg("t1"))
    assert ids(thread) == newest_first(t1_root + t1_child)
    assert {t.config["configurable"]["checkpoint_ns"] for t in thread} == {"", "child:1"}

    assert ids(await door.list(cfg("t1", ns=""))) == newest_first(t1_root)
    assert ids(await door.list(cfg("t1", ns="child:1"))) == newest_first(t1_child)
    assert await door.list(cfg("t1", ns="no-such-ns")) == []
    assert await door.list(cfg("t3")) == []

    # a checkpoint_id in the config lists that checkpoint only
    one = await door.list(t1_root[1])
    assert ids(one) == [cid(t1_root[1])]

    # tuples from list are as complete as from get_tuple
    by_id = {cid(t.config): t for t in all_listed}
    for config in everything:
        got = await door.get_tuple(config)
        assert got is not None
        listed = by_id[cid(config)]
        assert listed.config == got.config == config
        assert listed.parent_config == got.parent_config
        assert listed.checkpoint == got.checkpoint
        assert listed.metadata == got.metadata


async def test_list_before_and_limit(door: Any) -> None:
    configs = await put_chain(door, "t", 5)
    child = await put_chain(door, "t", 2, ns="child")
    root_ids = [cid(c) for c in configs]

    before = await door.list(cfg("t", ns=""), before=configs[3])
    assert ids(before) == root_ids[:3][::-1]
    assert await door.list(cfg("t", ns=""), before=configs[0]) == []

    assert ids(await door.list(cfg("t", ns=""), limit=2)) == root_ids[::-1][:2]
    assert ids(await door.list(cfg("t", ns=""), before=configs[4], limit=2)) == [
        root_ids[3],
        root_ids[2],
    ]
    assert await door.list(cfg("t"), limit=0) == []
    assert len(await door.list(cfg("t"), limit=100)) == 7
    assert len(await door.list(None, limit=3)) == 3
    # limit is applied after the filter
    limited = await door.list(cfg("t"), filter={"step": 1}, limit=1)
    assert len(limited) == 1
    assert limited[0].metadata["step"] == 1
    assert ids(limited) == [max(root_ids[1], cid(child[1]))]


async def test_list_limit_beyond_one_page(door: Any) -> None:
    configs = await put_chain(door, "t", 250)
    expected = [cid(c) for c in reversed(configs)]
    assert len(set(expected)) == 250

    limited = ids(await door.list(cfg("t"), limit=230))
    assert len(limited) == 230
    assert len(set(limited)) == 230
    assert limited == expected[:230]

    everything = ids(await door.list(cfg("t")))
    assert everything == expected
    assert ids(await door.list(None)) == expected
    assert ids(await door.list(cfg("t"), limit=1000)) == expected
    assert ids(await door.list(cfg("t"), limit=200)) == expected[:200]
    assert ids(await door.list(cfg("t"), before=configs[120])) == expected[130:]


async def test_saver_can_be_used_inside_the_list_loop(door: Any) -> None:
    saver = door.saver
    configs = await put_chain(door, "t", 110)  # two pages
    seen: list[str] = []

    def body(item: Any, i: int) -> None:
        got = saver.get_tuple(item.config)
        assert got is not None and got.config == item.config
        checkpoint, versions = next_checkpoint(saver, None, {"i": i})
        saver.put(cfg("other"), checkpoint, {"step": i}, versions)
        saver.put_writes(item.config, [("seen", i)], f"task-{i}")

    async def abody(item: Any, i: int) -> None:
        got = await saver.aget_tuple(item.config)
        assert got is not None and got.config == item.config
        checkpoint, versions = next_checkpoint(saver, None, {"i": i})
        await saver.aput(cfg("other"), checkpoint, {"step": i}, versions)
        await saver.aput_writes(item.config, [("seen", i)], f"task-{i}")
        # a nested listing of the same thread, too
        nested = [t async for t in saver.alist(cfg("t"), limit=1)]
        assert len(nested) == 1

    if door.is_async:

        async def run() -> None:
            i = 0
            async for item in saver.alist(cfg("t")):
                seen.append(cid(item.config))
                await abody(item, i)
                i += 1

        await asyncio.wait_for(run(), timeout=60)
    else:
        for i, item in enumerate(saver.list(cfg("t"))):
            seen.append(cid(item.config))
            body(item, i)
            assert len(list(saver.list(cfg("t"), limit=1))) == 1

    assert seen == [cid(c) for c in reversed(configs)]
    assert len(await door.list(cfg("other"))) == 110
    latest = await door.get_tuple(cfg("t"))
    assert latest is not None and latest.pending_writes == [("task-0", "seen", 0)]


# -- metadata filters --------------------------------------------------------------------

QUOTED = "he said \"hi\" and 'bye' \\ é ü 中文 😀 %_ ' OR 1=1 --"
WEIRD_KEY = "we\"ird.key '$[0]"

METADATA: dict[str, dict[str, Any]] = {
    "true": {"flag": True},
    "one": {"flag": 1},
    "false": {"flag": False},
    "zero": {"flag": 0},
    "string-true": {"flag": "true"},
    "null": {"k": None},
    "missing": {},
    "dict": {"d": {"b": 2, "a": 1}},
    "nested": {"d": {"a": 1, "b": {"y": [1, 2], "x": None}}},
    "list": {"l": [1, 2]},
    "list-reversed": {"l": [2, 1]},
    "int": {"n": 1},
    "float": {"n": 1.0},
    "float-half": {"n": 1.5},
    "quoted": {"s": QUOTED},
    "weird-key": {WEIRD_KEY: "v"},
    "several": {"source": "loop", "step": 3, "user": "u1"},
    "several-other-user": {"source": "loop", "step": 3, "user": "u2"},
    "several-other-step": {"source": "loop", "step": 4, "user": "u1"},
    "nested-quoted": {"q": {"s": QUOTED, "list": [QUOTED, "ü"]}},
}


@pytest.fixture
async def with_metadata(door: Any) -> Any:
    """One checkpoint per entry of METADATA (plus ``name``) in thread "meta"."""
    saver = door.saver
    parent = cfg("meta")
    for name, extra in METADATA.items():
        checkpoint, versions = next_checkpoint(saver, None, {"x": name})
        parent = await door.put(parent, checkpoint, {"name": name, **extra}, versions)
    return door


async def matching(door: Any, filter: dict[str, Any], thread: bool = True) -> set[str]:
    listed = await door.list(cfg("meta") if thread else None, filter=filter)
    return {t.metadata["name"] for t in listed}


async def test_metadata_is_stored_as_given(with_metadata: Any) -> None:
    door = with_metadata
    for t in await door.list(cfg("meta")):
        name = t.metadata["name"]
        assert t.metadata == {"name": name, **METADATA[name]}
        assert type(t.metadata.get("flag")) is type(METADATA[name].get("flag"))


FILTER_CASES: list[tuple[dict[str, Any], set[str]]] = [
    ({"flag": True}, {"true"}),
    ({"flag": 1}, {"one"}),
    ({"flag": False}, {"false"}),
    ({"flag": 0}, {"zero"}),
    ({"flag": "true"}, {"string-true"}),
    ({"k": None}, {"null"}),
    ({"d": {"a": 1, "b": 2}}, {"dict"}),
    ({"d": {"b": 2, "a": 1}}, {"dict"}),
    ({"d": {"a": 1}}, set()),
    ({"d": {"b": {"x": None, "y": [1, 2]}, "a": 1}}, {"nested"}),
    ({"d": {"b": {"x": None, "y": [2, 1]}, "a": 1}}, set()),
    ({"l": [1, 2]}, {"list"}),
    ({"l": [2, 1]}, {"list-reversed"}),
    ({"l": [1]}, set()),
    ({"n": 1}, {"int", "float"}),
    ({"n": 1.0}, {"int", "float"}),
    ({"n": 1.5}, {"float-half"}),
    ({"n": "1"}, set()),
    ({"s": QUOTED}, {"quoted"}),
    ({"s": QUOTED[:-1]}, set()),
    ({WEIRD_KEY: "v"}, {"weird-key"}),
    ({"source": "loop", "user": "u1"}, {"several", "several-other-step"}),
    ({"source": "loop", "step": 3}, {"several", "several-other-user"}),
    ({"source": "loop", "step": 3, "user": "u1"}, {"several"}),
    ({"source": "loop", "step": 3, "user": "u3"}, set()),
    ({"name": "several", "user": "u2"}, set()),
    ({"no-such-key": "x"}, set()),
    ({"q": {"list": [QUOTED, "ü"], "s": QUOTED}}, {"nested-quoted"}),
    ({"q": {"list": [QUOTED, "u"], "s": QUOTED}}, set()),
    ({}, set(METADATA)),
]


async def test_metadata_filters(with_metadata: Any) -> None:
    wrong = {}
    for filter, expected in FILTER_CASES:
        in_thread = await matching(with_metadata, filter)
        everywhere = await matching(with_metadata, filter, thread=False)
        if in_thread != expected or everywhere != expected:
            wrong[repr(filter)] = {"expected": expected, "thread": in_thread, "all": everywhere}
    assert wrong == {}


async def test_metadata_filter_numbers_inside_dicts_and_lists(door: Any) -> None:
    # "1 matches 1.0" and "dicts and lists compare as JSON" hold at any depth.
    saver = door.saver
    checkpoint, versions = next_checkpoint(saver, None, {"a": 1})
    await door.put(cfg("t"), checkpoint, {"d": {"x": 1.0}, "l": [1.0, 2], "m": {"y": 3}}, versions)
    should_match = [
        {"d": {"x": 1.0}},
        {"d": {"x": 1}},
        {"l": [1.0, 2]},
        {"l": [1, 2]},
        {"l": [1, 2.0]},
        {"m": {"y": 3.0}},
    ]
    should_not = [{"d": {"x": True}}, {"l": [True, 2]}, {"d": {"x": "1"}}, {"l": [2, 1]}]
    wrong = [f for f in should_match if len(await door.list(cfg("t"), filter=f)) != 1]
    wrong += [f for f in should_not if await door.list(cfg("t"), filter=f) != []]
    assert wrong == []


async def test_metadata_integers_are_64_bit(door: Any) -> None:
    # One rule on every dialect: metadata integers must fit a signed 64-bit integer
    # (SQLite and MySQL JSON hold no more exactly). Larger ones are refused, in metadata
    # and in filters, with CheckpointMetadataError, and nothing is stored.
    saver = door.saver
    for name, value in (("int64-max", 2**63 - 1), ("int64-min", -(2**63))):
        checkpoint, versions = next_checkpoint(saver, None, {"a": 1})
        await door.put(cfg("t"), checkpoint, {"name": name, "big": value}, versions)
    for value in (2**63, 2**70, -(2**63) - 1):
        checkpoint, versions = next_checkpoint(saver, None, {"a": 1})
        with pytest.raises(CheckpointMetadataError, match="64-bit"):
            await door.put(cfg("t"), checkpoint, {"big": value}, versions)
        with pytest.raises(CheckpointMetadataError, match="64-bit"):
            await door.list(cfg("t"), filter={"big": value})
    assert len(await door.list(cfg("t"))) == 2
    for name, value in (("int64-max", 2**63 - 1), ("int64-min", -(2**63))):
        got = await door.list(cfg("t"), filter={"big": value})
        assert [t.metadata["name"] for t in got] == [name]


async def test_metadata_with_nul_character(door: Any) -> None:
    # One documented rule on every dialect: NUL characters are removed from metadata
    # strings and keys at any depth (LangGraph strips them from top-level strings;
    # PostgreSQL JSONB cannot hold them), and from filters alike, never a driver error.
    saver = door.saver
    checkpoint, versions = next_checkpoint(saver, None, {"a": 1})
    config = await door.put(cfg("t"), checkpoint, {"d": {"s": "a\x00b", "k\x00": 1}}, versions)
    got = await door.get_tuple(config)
    assert got is not None and got.metadata == {"d": {"s": "ab", "k": 1}}
    assert len(await door.list(None, filter={"d": {"s": "a\x00b", "k": 1}})) == 1
    assert await door.list(None, filter={"other": "a\x00b"}) == []


async def test_metadata_filter_null_needs_explicit_null(door: Any) -> None:
    saver = door.saver
    checkpoint, versions = next_checkpoint(saver, None, {"a": 1})
    await door.put(cfg("a"), checkpoint, {"name": "missing"}, versions)
    assert await door.list(None, filter={"k": None}) == []
    other, versions = next_checkpoint(saver, None, {"a": 1})
    await door.put(cfg("b"), other, {"name": "null", "k": None}, versions)
    assert [t.metadata["name"] for t in await door.list(None, filter={"k": None})] == ["null"]


async def test_metadata_filter_across_threads(door: Any) -> None:
    await put_chain(door, "t1", 3)
    await put_chain(door, "t2", 3)
    listed = await door.list(None, filter={"source": "loop", "step": 1})
    assert sorted(t.config["configurable"]["thread_id"] for t in listed) == ["t1", "t2"]
    listed = await door.list(cfg("t2"), filter={"step": 2})
    assert [t.config["configurable"]["thread_id"] for t in listed] == ["t2"]


NON_JSON_FILTERS: list[dict[Any, Any]] = [
    {"n": float("nan")},
    {"n": float("inf")},
    {"n": object()},
    {"n": [1, float("nan")]},
    {"n": {"a": object()}},
    {"n": {1: "non-string key"}},
]


async def test_metadata_filter_with_non_json_value_raises(door: Any) -> None:
    await put_chain(door, "t", 1)
    for filter in NON_JSON_FILTERS:
        with pytest.raises(CheckpointMetadataError):
            await door.list(cfg("t"), filter=filter)
        with pytest.raises(CheckpointMetadataError):
            await door.list(None, filter=filter)


async def test_non_json_metadata_is_rejected_on_put(door: Any) -> None:
    saver = door.saver
    checkpoint, versions = next_checkpoint(saver, None, {"a": 1})
    with pytest.raises(CheckpointMetadataError):
        await door.put(cfg("t"), checkpoint, {"bad": float("nan")}, versions)
    with pytest.raises(CheckpointMetadataError):
        await door.put(cfg("t"), checkpoint, {"bad": object()}, versions)
    assert await door.list(None) == []


# -- delete_thread -----------------------------------------------------------------------


async def test_delete_thread(door: Any) -> None:
    saver = door.saver
    for thread in ("doomed", "kept"):
        for ns in ("", "child:1", "child:1|grandchild:2"):
            configs = await put_chain(door, thread, 2, ns=ns)
            await door.put_writes(configs[-1], [("a", 1), ("b", 2)], "task")
    # writes whose checkpoint was never stored belong to the thread too
    await door.put_writes(cfg("doomed", checkpoint_id="orphan", ns=""), [("a", 1)], "task")
    kept_before = await door.list(cfg("kept"))
    kept_rows = [count_rows(saver, t, thread_id="kept") for t in (checkpoints, blobs, writes)]

    await door.delete_thread("doomed")
    assert await door.list(cfg("doomed")) == []
    assert await door.get_tuple(cfg("doomed")) is None
    assert await door.get_tuple(cfg("doomed", ns="child:1")) is None
    for table in (checkpoints, blobs, writes):
        assert count_rows(saver, table, thread_id="doomed") == 0, table.name

    kept_after = await door.list(cfg("kept"))
    assert ids(kept_after) == ids(kept_before)
    assert [t.pending_writes for t in kept_after] == [t.pending_writes for t in kept_before]
    assert [t.checkpoint for t in kept_after] == [t.checkpoint for t in kept_before]
    assert [
        count_rows(saver, t, thread_id="kept") for t in (checkpoints, blobs, writes)
    ] == kept_rows

    await door.delete_thread("doomed")  # a second call is a no-op
    await door.delete_thread("never-existed")
    assert ids(await door.list(cfg("kept"))) == ids(kept_before)


async def test_thread_can_be_reused_after_delete(door: Any) -> None:
    await put_chain(door, "t", 2)
    await door.delete_thread("t")
    configs = await put_chain(door, "t", 1)
    listed = await door.list(cfg("t"))
    assert ids(listed) == [cid(configs[0])]
    assert listed[0].checkpoint["channel_values"] == {"counter": 0}


# -- get_next_version --------------------------------------------------------------------


def test_get_next_version(saver: Any) -> None:
    versions = [saver.get_next_version(None, None)]
    for _ in range(20):
        versions.append(saver.get_next_version(versions[-1], None))
    assert all(isinstance(v, str) for v in versions)
    assert versions == sorted(versions)
    assert len(set(versions)) == len(versions)
    assert all(a < b for a, b in itertools.pairwise(versions))

    # unique across forks: many successors of one version are all different
    siblings = {saver.get_next_version(versions[3], None) for _ in range(200)}
    assert len(siblings) == 200
    assert all(s > versions[3] for s in siblings)

    # integer versions (other savers, older data) are accepted
    from_int = saver.get_next_version(5, None)
    assert isinstance(from_int, str)
    assert int(from_int.split(".")[0]) == 6
    assert saver.get_next_version(from_int, None) > from_int
    assert saver.get_next_version(0, None) < saver.get_next_version(1, None)
    assert saver.get_next_version(9, None) < saver.get_next_version(10, None)


# -- bad configs -------------------------------------------------------------------------


BAD_CONFIGS: list[dict[str, Any]] = [
    {},
    {"configurable": {}},
    {"configurable": {"checkpoint_ns": ""}},
    {"configurable": {"thread_id": None}},
    {"configurable": {"thread_id": ""}},
    {"configurable": {"thread_id": {"nested": "dict"}}},
    {"configurable": {"thread_id": ["list"]}},
    {"configurable": {"thread_id": "x" * (THREAD_ID_MAX_LENGTH + 1)}},
]


async def test_bad_config_is_rejected(door: Any) -> None:
    saver = door.saver
    checkpoint, versions = next_checkpoint(saver, None, {"a": 1})
    for config in BAD_CONFIGS:
        with pytest.raises(CheckpointConfigError):
            await door.get_tuple(config)
        with pytest.raises(CheckpointConfigError):
            await door.put(config, checkpoint, {}, versions)
        with pytest.raises(CheckpointConfigError):
            await door.list(config)
        with_id = {
            "configurable": {**config.get("configurable", {}), "checkpoint_id": checkpoint["id"]}
        }
        with pytest.raises(CheckpointConfigError):
            await door.put_writes(with_id, [("a", 1)], "task")
    # nothing was stored
    assert await door.list(None) == []
    for table in (checkpoints, blobs, writes):
        assert count_rows(saver, table) == 0


async def test_bad_thread_id_on_delete_thread(door: Any) -> None:
    with pytest.raises(CheckpointConfigError):
        await door.delete_thread({"nested": "dict"})
    with pytest.raises(CheckpointConfigError):
        await door.delete_thread("x" * (THREAD_ID_MAX_LENGTH + 1))


async def test_thread_id_at_the_length_limit_works(door: Any) -> None:
    thread_id = "é" * THREAD_ID_MAX_LENGTH
    [config] = await put_chain(door, thread_id, 1)
    assert config["configurable"]["thread_id"] == thread_id
    got = await door.get_tuple(cfg(thread_id))
    assert got is not None and got.config == config
    assert ids(await door.list(cfg(thread_id))) == [cid(config)]


async def test_non_string_namespace_is_rejected(door: Any) -> None:
    with pytest.raises(CheckpointConfigError):
        await door.get_tuple(cfg("t", ns=5))


# -- many channels -----------------------------------------------------------------------


async def test_list_page_with_many_distinct_channel_versions(door: Any) -> None:
    # One page of list(None): 100 checkpoints of 100 threads, 100 channels each, i.e.
    # 10,000 distinct blobs to fetch for the page (a graph with ~100 channels).
    saver = door.saver
    for t in range(100):
        checkpoint, versions = next_checkpoint(saver, None, {f"ch{i}": i for i in range(100)})
        await door.put(cfg(f"t{t}"), checkpoint, {}, versions)
    listed = await door.list(None)
    assert len(listed) == 100
    assert all(t.checkpoint["channel_values"] == {f"ch{i}": i for i in range(100)} for t in listed)


async def test_get_tuple_of_a_checkpoint_with_many_channels(door: Any) -> None:
    saver = door.saver
    values = {f"ch{i}": i for i in range(10_000)}
    checkpoint, versions = next_checkpoint(saver, None, values)
    config = await door.put(cfg("t"), checkpoint, {}, versions)
    got = await door.get_tuple(config)
    assert got is not None and got.checkpoint["channel_values"] == values
