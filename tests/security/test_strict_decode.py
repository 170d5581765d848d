"""A stored object whose class cannot be rebuilt: LangGraph's default hands back its raw
fields (a dict); ``strict_decode`` (or ``LANGGRAPH_STRICT_MSGPACK``) raises
``CheckpointDecodeError`` naming the thread, checkpoint and channel or write."""

from __future__ import annotations

import importlib
import inspect
import logging
import sys
import textwrap
import uuid
from pathlib import Path
from typing import Any, Optional

import pytest
from langgraph.checkpoint.base import empty_checkpoint

from langgraph.checkpoint.sqlalchemy import CheckpointDecodeError, SQLAlchemySaver
from langgraph.checkpoint.sqlalchemy._codec.inline import INLINE_VALUE_LIMIT

from ..doors import Door

MODULE_SOURCE = textwrap.dedent(
    """
    from dataclasses import dataclass
    from pydantic import BaseModel

    @dataclass
    class Booking:
        hotel: str
        nights: int

    class Profile(BaseModel):
        name: str
        age: int
    """
)


def _module_gone(tmp_path: Path) -> tuple[Any, Any]:
    """Import a throwaway module, build one dataclass and one pydantic object of it, then
    make the module unimportable (as after a refactoring that moved the classes)."""
    name = f"lgsa_gone_{uuid.uuid4().hex[:10]}"
    folder = tmp_path / "mods"
    folder.mkdir()
    (folder / f"{name}.py").write_text(MODULE_SOURCE)
    sys.path.insert(0, str(folder))
    try:
        module = importlib.import_module(name)
        booking, profile = module.Booking("Ritz", 3), module.Profile(name="Ada", age=36)
    finally:
        sys.path.remove(str(folder))
    del sys.modules[name]
    (folder / f"{name}.py").unlink()
    importlib.invalidate_caches()
    return booking, profile


async def _store(door: Door, tmp_path: Path, thread_id: str) -> dict[str, Any]:
    booking, profile = _module_gone(tmp_path)
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"booking": booking, "profile": [profile, "plain"]}
    checkpoint["channel_versions"] = {"booking": "1", "profile": "1"}
    config = await door.put(
        {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}},
        checkpoint,
        {"source": "loop", "step": 1},
        {"booking": "1", "profile": "1"},
    )
    await door.put_writes(config, [("booking", booking)], "task-1")
    return config  # type: ignore[no-any-return]


async def test_default_hands_back_raw_fields(saver_factory: Any, mode: str, tmp_path: Path) -> None:
    door = Door(saver_factory(strict_decode=False), mode)
    config = await _store(door, tmp_path, "t-default")
    got = await door.get_tuple(config)
    assert got is not None
    # LangGraph's own behaviour, unchanged: the fields as a dict (logged, not raised).
    assert got.checkpoint["channel_values"]["booking"] == {"hotel": "Ritz", "nights": 3}
    assert got.checkpoint["channel_values"]["profile"][0] == {"name": "Ada", "age": 36}
    assert got.pending_writes is not None
    assert got.pending_writes[0][2] == {"hotel": "Ritz", "nights": 3}


async def test_strict_raises_naming_the_channel(
    saver_factory: Any, mode: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    writer = Door(saver_factory(strict_decode=False), mode)
    config = await _store(writer, tmp_path, "t-strict")
    door = Door(saver_factory(shared=True, strict_decode=True), mode)
    with pytest.raises(CheckpointDecodeError) as info:
        await door.get_tuple(config)
    error = info.value
    assert error.thread_id == "t-strict"
    assert error.checkpoint_id == config["configurable"]["checkpoint_id"]
    assert error.part.startswith(("channel booking", "channel profile", "write task-1/booking"))
    assert "Booking" in str(error) or "Profile" in str(error)
    # list() skips the checkpoint it cannot decode and logs it (the documented rule).
    with caplog.at_level(logging.ERROR, logger="langgraph.checkpoint.sqlalchemy"):
        assert await door.list({"configurable": {"thread_id": "t-strict"}}) == []


async def test_strict_passes_objects_that_rebuild(saver_factory: Any, mode: str) -> None:
    from datetime import datetime, timezone

    from langchain_core.messages import AIMessage, HumanMessage

    door = Door(saver_factory(strict_decode=True), mode)
    values = {
        "messages": [HumanMessage("hi"), AIMessage("hello", id="m2")],
        "when": datetime(2026, 12, 1, tzinfo=timezone.utc),
        "tags": {"a", "b"},
    }
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = values
    checkpoint["channel_versions"] = {ch: "1" for ch in values}
    config = await door.put(
        {"configurable": {"thread_id": "t-ok", "checkpoint_ns": ""}},
        checkpoint,
        {"source": "loop", "step": 1},
        {ch: "1" for ch in values},
    )
    got = await door.get_tuple(config)
    assert got is not None
    assert got.checkpoint["channel_values"] == values


def test_strict_mode_leaves_strict_decode_off(monkeypatch: pytest.MonkeyPatch) -> None:
    """LANGGRAPH_STRICT_MSGPACK restricts what the serializer rebuilds; it does not make
    the saver refuse what the allowlist hands back as data (LangGraph's strict mode gives
    a blocked object back as its fields, and a graph's pydantic state rebuilds it)."""
    monkeypatch.setenv("LANGGRAPH_STRICT_MSGPACK", "true")
    with SQLAlchemySaver.from_conn_string(":memory:") as saver:
        assert saver.strict is True
        assert saver.strict_decode is False
    with SQLAlchemySaver.from_conn_string(":memory:", strict_decode=True) as saver:
        assert saver.strict_decode is True
    monkeypatch.delenv("LANGGRAPH_STRICT_MSGPACK")
    with SQLAlchemySaver.from_conn_string(":memory:") as saver:
        assert saver.strict is False
        assert saver.strict_decode is False


def test_documented_inline_limit_default_is_the_constant() -> None:
    # The API reference shows the signature's literal; it must be the real limit.
    for fn in (SQLAlchemySaver.__init__, SQLAlchemySaver.from_conn_string):
        assert inspect.signature(fn).parameters["inline_limit"].default == INLINE_VALUE_LIMIT


def _strict_msgpack(monkeypatch: pytest.MonkeyPatch) -> None:
    """LANGGRAPH_STRICT_MSGPACK=true as a process started with it sees it: LangGraph reads
    the variable once, at import, into two module flags."""
    from langgraph._internal import _serde as lg_internal_serde
    from langgraph.checkpoint.serde import _msgpack as lg_msgpack

    monkeypatch.setenv("LANGGRAPH_STRICT_MSGPACK", "true")
    monkeypatch.delenv("LANGGRAPH_CHECKPOINT_STRICT", raising=False)
    monkeypatch.setattr(lg_msgpack, "STRICT_MSGPACK_ENABLED", True)
    monkeypatch.setattr(lg_internal_serde, "STRICT_MSGPACK_ENABLED", True)


async def test_strict_msgpack_graph_with_a_local_pydantic_class_resumes(
    saver_factory: Any, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under LANGGRAPH_STRICT_MSGPACK=true (LangGraph's own CI step) a graph whose pydantic
    state holds a model class defined inside a function resumes after an interrupt: the
    allowlist leaves the stored model as its fields, the saver hands them back as
    LangGraph's serializer does, and pydantic rebuilds the model from the state schema, as
    with every official saver. A saver started afresh (a second process) resumes too."""
    from langgraph.graph import END, START, StateGraph
    from langgraph.types import Command, interrupt
    from pydantic import BaseModel, create_model

    from ..doors import restarted

    _strict_msgpack(monkeypatch)

    class Booking(BaseModel):  # defined in a function: not importable by name
        hotel: str
        nights: int

    # The state's annotations must be objects, not strings naming a local class (this
    # module has ``from __future__ import annotations``).
    State = create_model("State", booking=(Optional[Booking], None), answer=(str, ""))  # noqa: UP045

    def book(state: Any) -> dict[str, Any]:
        return {"booking": Booking(hotel="Ritz", nights=3)}

    def ask(state: Any) -> dict[str, Any]:
        assert isinstance(state.booking, Booking), state.booking
        return {"answer": interrupt("confirm?")}

    builder = StateGraph(State)
    builder.add_node("book", book)
    builder.add_node("ask", ask)
    builder.add_edge(START, "book")
    builder.add_edge("book", "ask")
    builder.add_edge("ask", END)

    saver = saver_factory()
    assert saver.strict and not saver.strict_decode
    door = Door(saver, mode)
    config = {"configurable": {"thread_id": "strict-local"}}
    first = await door.invoke(builder.compile(checkpointer=saver), {}, config)
    assert "__interrupt__" in first
    later = restarted(saver_factory, mode)
    assert later.saver.strict
    out = await later.invoke(
        builder.compile(checkpointer=later.saver), Command(resume="yes"), config
    )
    assert out["answer"] == "yes"
    # Exactly what an official saver gives back for the same graph in the same mode.
    from langgraph.checkpoint.sqlite import SqliteSaver

    with SqliteSaver.from_conn_string(":memory:") as official:
        graph = builder.compile(checkpointer=official)
        graph.invoke({}, config)
        expected = graph.invoke(Command(resume="yes"), config)
        expected_state = graph.get_state(config).values
    assert out == expected
    state = await later.get_state(builder.compile(checkpointer=later.saver), config)
    assert state.values == expected_state
