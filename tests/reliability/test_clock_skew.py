"""Clock skew is loud: LangGraph's latest checkpoint is the highest
``checkpoint_id``, made from the writing host's clock, so a child whose id sorts before
its parent's would never be the latest. The put is refused with a typed error naming
both ids, before anything is written; ids that carry no time order are left alone, and
transfer copies histories as they are."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from langgraph.checkpoint.sqlalchemy import CheckpointClockSkewError, CheckpointConfigError

from ..checkpoints import config, next_checkpoint
from ..doors import Door


async def _parent(door: Door, thread: str) -> tuple[Any, Any]:
    cp, versions = next_checkpoint(door.saver, None, {"step": 0})
    stored = await door.put(config(thread, ns=""), cp, {"source": "input", "step": -1}, versions)
    return cp, stored


async def test_a_child_that_sorts_before_its_parent_is_refused(door: Door) -> None:
    parent, parent_config = await _parent(door, "t")
    child, versions = next_checkpoint(door.saver, parent, {"step": 1}, 1)
    child["id"] = _seconds_earlier(parent["id"], 10)  # a host whose clock is 10 s behind
    with pytest.raises(CheckpointClockSkewError) as err:
        await door.put(parent_config, child, {"source": "loop", "step": 1}, versions)
    assert isinstance(err.value, CheckpointConfigError)
    assert err.value.checkpoint_id == child["id"]
    assert err.value.parent_checkpoint_id == parent["id"]
    assert parent["id"] in str(err.value) and "clock" in str(err.value)
    latest = await door.get_tuple(config("t", ns=""))
    assert latest.checkpoint["id"] == parent["id"]  # nothing was stored
    assert len(await door.list(config("t", ns=""))) == 1


async def test_ids_without_a_time_order_are_not_checked(door: Door) -> None:
    parent, parent_config = await _parent(door, "t")
    child, versions = next_checkpoint(door.saver, parent, {"step": 1}, 1)
    child["id"] = "0" + str(uuid.uuid4())[1:]  # a random (version 4) id, sorting low
    stored = await door.put(parent_config, child, {"source": "loop", "step": 1}, versions)
    assert stored["configurable"]["checkpoint_id"] == child["id"]


def _seconds_earlier(uuid6_text: str, seconds: int) -> str:
    """A version 6 UUID whose timestamp (60 bits, 100 ns units) is ``seconds`` earlier."""
    u = uuid.UUID(uuid6_text).int
    timestamp = ((u >> 80) << 12) | ((u >> 64) & 0x0FFF)
    timestamp -= seconds * 10**7
    out = (timestamp >> 12) << 80 | 6 << 76 | (timestamp & 0x0FFF) << 64 | (u & ((1 << 64) - 1))
    return str(uuid.UUID(int=out))
