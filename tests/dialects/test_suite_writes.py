"""The dialect suite, writes: what a family's insert constructs promise, through the
public saver, on every backend of the suite (``extra`` too), sync and async.

Duties of :class:`~langgraph.checkpoint.sqlalchemy.dialects.QueryBuilder` exercised:
``insert``, ``upsert`` (a checkpoint put again, a special write put again),
``insert_ignore`` (a pending write and a blob are first-write-wins), ``combine_writes``
and ``one_statement_write_options`` (a put with blob rows, ``delete_thread``),
``keys_in``/``keys_params`` (a checkpoint of more channels than ``in_list_chunk``, read
back in chunks) and ``value_limit`` (a value of a megabyte round-trips).
"""

from __future__ import annotations

import pytest
from langgraph.checkpoint.serde.types import ERROR

from ..checkpoints import config, next_checkpoint
from ..doors import Door


async def test_a_checkpoint_put_again_is_overwritten_not_doubled(door: Door) -> None:
    checkpoint, versions = next_checkpoint(door.saver, None, {"a": 1})
    first = await door.put(config("t", ns=""), checkpoint, {"step": 1, "k": "old"}, versions)
    again = await door.put(config("t", ns=""), checkpoint, {"step": 2, "k": "new"}, versions)
    assert again == first
    got = await door.get_tuple(first)
    assert (got.metadata["step"], got.metadata["k"]) == (2, "new")
    assert got.checkpoint["channel_values"] == {"a": 1}
    assert len(await door.list(config("t"))) == 1


async def test_a_pending_write_is_first_write_wins_and_a_special_one_is_replaced(
    door: Door,
) -> None:
    checkpoint, versions = next_checkpoint(door.saver, None, {"a": 1})
    stored = await door.put(config("t", ns=""), checkpoint, {}, versions)
    await door.put_writes(stored, [("x", 1), ("y", 2)], "task-1")
    await door.put_writes(stored, [("x", 10), ("y", 20)], "task-1")  # same keys: kept
    await door.put_writes(stored, [(ERROR, "first")], "task-2")
    await door.put_writes(stored, [(ERROR, "second")], "task-2")  # special: replaced
    got = await door.get_tuple(stored)
    writes = sorted((task, channel, repr(value)) for task, channel, value in got.pending_writes)
    assert writes == [
        ("task-1", "x", "1"),
        ("task-1", "y", "2"),
        ("task-2", ERROR, "'second'"),
    ]


@pytest.mark.saver_kwargs(inline_limit=0)
async def test_blob_rows_are_written_once_and_deleted_with_their_thread(door: Door) -> None:
    parent, parent_config = None, config("t", ns="")
    for step in range(3):
        checkpoint, versions = next_checkpoint(door.saver, parent, {"a": step, "b": "x" * step})
        await door.put(parent_config, checkpoint, {"step": step}, versions)
        stored = await door.put(parent_config, checkpoint, {"step": step}, versions)  # again
        parent, parent_config = checkpoint, stored
    other, versions = next_checkpoint(door.saver, None, {"a": "other"})
    await door.put(config("u", ns=""), other, {}, versions)
    latest = await door.get_tuple(config("t"))
    assert latest.checkpoint["channel_values"] == {"a": 2, "b": "xx"}
    first = (await door.list(config("t")))[-1]
    assert first.checkpoint["channel_values"] == {"a": 0, "b": ""}

    await door.delete_thread("t")
    assert await door.get_tuple(config("t")) is None
    assert await door.list(config("t")) == []
    assert all(table["rows"] == 0 for table in door.saver.storage_stats("t").values())
    kept = await door.get_tuple(config("u"))
    assert kept.checkpoint["channel_values"] == {"a": "other"}


@pytest.mark.saver_kwargs(inline_limit=0)
async def test_more_channels_than_one_key_list_holds_read_back_whole(door: Door) -> None:
    count = door.saver._qb.in_list_chunk * 2 + 7
    values = {f"ch{i:05}": i for i in range(count)}
    checkpoint, versions = next_checkpoint(door.saver, None, values)
    stored = await door.put(config("t", ns=""), checkpoint, {}, versions)
    got = await door.get_tuple(stored)
    assert got.checkpoint["channel_values"] == values
    (listed,) = await door.list(config("t"))
    assert listed.checkpoint["channel_values"] == values


async def test_a_megabyte_value_and_write_round_trip(door: Door) -> None:
    big = "é" * (512 * 1024)  # 1 MiB of UTF-8
    checkpoint, versions = next_checkpoint(door.saver, None, {"big": big})
    stored = await door.put(config("t", ns=""), checkpoint, {}, versions)
    await door.put_writes(stored, [("big", big)], "task-1")
    got = await door.get_tuple(stored)
    assert got.checkpoint["channel_values"]["big"] == big
    assert got.pending_writes == [("task-1", "big", big)]
