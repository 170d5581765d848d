"""Hostile sizes of metadata and filters: typed errors at documented limits.

Metadata nests dicts and lists at most ``MAX_DEPTH`` (31) levels, the metadata dict
counting as one (MariaDB refuses 32); a filter ``{key: value}`` is held to the same rule,
and has at most ``MAX_FILTER_KEYS`` (100) keys (SQLite refuses about 1,000 conditions).
Over a limit, by one or by thousands, ``put`` and ``list`` raise
``CheckpointMetadataError`` naming the limit: never ``RecursionError``, a driver error
or MariaDB's constraint failure. Every backend, sync and async.
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import empty_checkpoint

from langgraph.checkpoint.sqlalchemy import CheckpointMetadataError
from langgraph.checkpoint.sqlalchemy._codec.canonical import MAX_DEPTH, MAX_FILTER_KEYS

from ..doors import Door


def cfg(thread_id: str) -> RunnableConfig:
    return {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}


def nested(levels: int, kind: str = "dict") -> Any:
    """A value of ``levels`` nested dicts (or lists) around a string."""
    value: Any = "x"
    for _ in range(levels):
        value = {"k": value} if kind == "dict" else [value]
    return value


@pytest.mark.parametrize("kind", ["dict", "list"])
async def test_metadata_at_the_depth_limit_is_stored_and_found(door: Door, kind: str) -> None:
    deepest = nested(MAX_DEPTH - 1, kind)  # plus the metadata dict: MAX_DEPTH levels
    config = await door.put(cfg("t"), empty_checkpoint(), {"deep": deepest}, {})
    stored = await door.get_tuple(config)
    assert stored is not None and stored.metadata["deep"] == deepest
    found = await door.list(None, filter={"deep": deepest})
    assert [t.config for t in found] == [config]


@pytest.mark.parametrize("levels", [MAX_DEPTH, 900, 5_000])
@pytest.mark.parametrize("kind", ["dict", "list"])
async def test_metadata_over_the_depth_limit_is_refused(door: Door, kind: str, levels: int) -> None:
    with pytest.raises(CheckpointMetadataError, match=f"{MAX_DEPTH} levels"):
        await door.put(cfg("t"), empty_checkpoint(), {"deep": nested(levels, kind)}, {})
    assert await door.get_tuple(cfg("t")) is None  # nothing stored


async def test_a_cyclic_metadata_is_refused(door: Door) -> None:
    loop: dict[str, Any] = {}
    loop["self"] = loop
    with pytest.raises(CheckpointMetadataError, match="levels"):
        await door.put(cfg("t"), empty_checkpoint(), {"loop": loop}, {})


@pytest.mark.parametrize("levels", [MAX_DEPTH, 1_500, 5_000])
async def test_filters_over_the_depth_limit_are_refused(door: Door, levels: int) -> None:
    await door.put(cfg("t"), empty_checkpoint(), {"source": "loop"}, {})
    with pytest.raises(CheckpointMetadataError, match=f"{MAX_DEPTH} levels"):
        await door.list(None, filter={"deep": nested(levels)})


async def test_filters_up_to_the_key_limit_run(door: Door) -> None:
    metadata = {f"k{i}": i for i in range(MAX_FILTER_KEYS)}
    config = await door.put(cfg("t"), empty_checkpoint(), metadata, {})
    assert [t.config for t in await door.list(None, filter=metadata)] == [config]
    # the most keys, each with the deepest value
    deep = {f"k{i}": nested(MAX_DEPTH - 1) for i in range(MAX_FILTER_KEYS)}
    assert await door.list(None, filter=deep) == []


@pytest.mark.parametrize("keys", [MAX_FILTER_KEYS + 1, 1_001, 20_000])
async def test_filters_over_the_key_limit_are_refused(door: Door, keys: int) -> None:
    await door.put(cfg("t"), empty_checkpoint(), {"source": "loop"}, {})
    with pytest.raises(CheckpointMetadataError, match=f"limit is {MAX_FILTER_KEYS}"):
        await door.list(None, filter={f"k{i}": i for i in range(keys)})
    assert len(await door.list(None)) == 1  # the saver still works
