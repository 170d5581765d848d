"""Large values: a 40 MB channel value and a 40 MB pending write round-trip on every
backend (on MySQL/MariaDB: as large as the server's ``max_allowed_packet`` allows);
above what MySQL/MariaDB accept in one statement, a typed error names the setting and
nothing of the call is stored."""

from __future__ import annotations

import os
from typing import Any

import pytest
from langgraph.checkpoint.base import empty_checkpoint
from sqlalchemy import func, select, text

from langgraph.checkpoint.sqlalchemy import ValueTooLargeError
from langgraph.checkpoint.sqlalchemy.schema import (
    CHECKPOINT_NS_MAX_LENGTH,
    THREAD_ID_MAX_LENGTH,
    blobs,
    writes,
)

from ..doors import Door

MB = 1024 * 1024


def big_text(n_bytes: int) -> str:
    """Incompressible ASCII of ``n_bytes`` (hex of random bytes)."""
    return os.urandom(n_bytes // 2).hex()


def config(thread_id: str = "big") -> dict[str, Any]:
    return {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}


def count(saver: Any, table: Any) -> int:
    engine = saver.engine.execution_options(schema_translate_map={None: saver.schema})
    with engine.connect() as conn:
        return int(conn.execute(select(func.count()).select_from(table)).scalar_one())


def server_packet(saver: Any) -> int:
    """MySQL/MariaDB's ``max_allowed_packet`` (the suite changes no server setting)."""
    with saver.engine.connect() as conn:
        return int(conn.execute(text("SELECT @@max_allowed_packet")).scalar_one())


async def test_40_mb_value_and_write_round_trip(door: Door, backend: str) -> None:
    """40 MB, or on MySQL/MariaDB the largest value the server's own
    ``max_allowed_packet`` lets through (the saver takes half of it for one value: 7 MB
    at MariaDB's default of 16 MB)."""
    size = 40 * MB
    if backend == "mariadb":
        size = min(size, server_packet(door.saver) // 2 - MB)
    value = big_text(size)
    checkpoint = empty_checkpoint()
    version = door.saver.get_next_version(None, None)
    checkpoint["channel_values"] = {"big": value, "small": 1}
    checkpoint["channel_versions"] = {"big": version, "small": version}
    stored = await door.put(config(), checkpoint, {}, {"big": version, "small": version})
    await door.put_writes(stored, [("big", value)], "task-1")
    got = await door.get_tuple(stored)
    assert got is not None
    assert got.checkpoint["channel_values"]["big"] == value
    assert got.pending_writes == [("task-1", "big", value)]


async def test_value_over_max_allowed_packet_is_refused_whole(door: Door, backend: str) -> None:
    if backend != "mariadb":
        pytest.skip("max_allowed_packet is a MySQL/MariaDB server limit")
    limit = server_packet(door.saver)
    if limit > 512 * MB:
        pytest.skip(f"max_allowed_packet is {limit} bytes: too large to exceed in a test")
    first = await door.put(config(), empty_checkpoint(), {}, {})
    checkpoint = empty_checkpoint()
    version = door.saver.get_next_version(None, None)
    checkpoint["channel_values"] = {"big": big_text(limit // 2 + MB), "small": 1}
    checkpoint["channel_versions"] = {"big": version, "small": version}
    with pytest.raises(ValueTooLargeError, match="max_allowed_packet"):
        await door.put(first, checkpoint, {}, {"big": version, "small": version})
    with pytest.raises(ValueTooLargeError, match="max_allowed_packet"):
        await door.put_writes(first, [("small", 2), ("big", big_text(limit // 2 + MB))], "task-1")
    # Nothing of either call is stored, and the saver goes on working.
    assert count(door.saver, blobs) == 0
    assert count(door.saver, writes) == 0
    latest = await door.get_tuple(config())
    assert latest is not None and latest.config == first
    await door.put_writes(first, [("small", 3)], "task-2")
    assert (await door.get_tuple(first)).pending_writes == [("task-2", "small", 3)]  # type: ignore[union-attr]


async def test_key_limits_are_stated_and_nothing_is_truncated(door: Door) -> None:
    """Ids at the limit round-trip on every dialect (1,000 emoji are 4,000 bytes of
    UTF-8); past it, the call is refused before any write with an error that states the
    limit."""
    from langgraph.checkpoint.sqlalchemy import CheckpointConfigError

    thread = "😀" * THREAD_ID_MAX_LENGTH
    namespace = "n" * (CHECKPOINT_NS_MAX_LENGTH - 1) + "😀"
    stored = await door.put(
        {"configurable": {"thread_id": thread, "checkpoint_ns": namespace}},
        empty_checkpoint(),
        {},
        {},
    )
    assert stored["configurable"]["thread_id"] == thread
    got = await door.get_tuple(stored)
    assert got is not None and got.config == stored
    # 50 nested subgraph segments ("node:<uuid>") and a 1,001-character thread id.
    deep = "|".join(f"node{i}:{'0' * 8}-0000-0000-0000-{'0' * 12}" for i in range(50))
    for configurable, limit in (
        ({"thread_id": "t", "checkpoint_ns": deep}, "2000"),
        ({"thread_id": "x" * 1001, "checkpoint_ns": ""}, "1000"),
    ):
        with pytest.raises(CheckpointConfigError, match=limit):
            await door.put({"configurable": configurable}, empty_checkpoint(), {}, {})
    assert [t.config for t in await door.list(None)] == [stored]


async def test_psycopg_reads_values_in_binary_and_client_cursors_in_text(
    saver_factory: Any, backend: str
) -> None:
    """On psycopg the reads of stored values ask for binary results (a bytea value as its
    bytes, not as hex text); a connection whose cursors bind on the client side
    (``ClientCursor``, which refuses binary results) reads them in text format. Both
    read back what was stored, values, pending writes and delta history alike."""
    if backend != "postgres":
        pytest.skip("psycopg's result formats")
    import psycopg

    value = [big_text(100_000), os.urandom(1_000), {"n": 1, "f": 0.5, "t": "ü"}]
    for connect_args in ({}, {"cursor_factory": psycopg.ClientCursor}):
        saver = saver_factory(connect_args=connect_args) if connect_args else saver_factory()
        door = Door(saver, "sync")
        checkpoint = empty_checkpoint()
        version = saver.get_next_version(None, None)
        checkpoint["channel_values"] = {"big": value}
        checkpoint["channel_versions"] = {"big": version}
        stored = await door.put(config(), checkpoint, {}, {"big": version})
        await door.put_writes(stored, [("big", value)], "task-1")
        got = await door.get_tuple(stored)
        assert got is not None
        assert got.checkpoint["channel_values"]["big"] == value
        assert got.pending_writes == [("task-1", "big", value)]
        child = empty_checkpoint()
        child_version = saver.get_next_version(version, None)
        child["channel_versions"] = {"big": child_version}  # a delta step: no value
        latest = await door.put(stored, child, {}, {"big": child_version})
        history = await door.get_delta_channel_history(config=latest, channels=["big"])
        assert dict(history) == {"big": {"writes": [("task-1", "big", value)], "seed": value}}
        with saver.engine.connect() as conn:
            cursor = conn.connection.cursor()
            assert isinstance(cursor, psycopg.ClientCursor) == bool(connect_args)
            cursor.close()
