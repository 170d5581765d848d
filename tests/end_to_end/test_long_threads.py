"""Long threads stored as pieces read back exactly, on every backend and door.

A chat's ``messages`` list grows at each step; the saver stores a new version that
extends the stored one as a piece (the appended bytes and a reference). These tests run
real ``add_messages`` graphs for many turns and check that a new process (a second saver
on the same database) reads every state the graph held, after the thread grew, after
``prune(keep_latest)``, after ``copy_thread``; that lists that do not grow at their end
(a removed message, a replaced one, a list that shrinks, a message changed in place, an
encrypted serializer's output) are stored whole and read back exactly too; and that a
piece whose base is gone is a typed error naming the checkpoint, never a wrong value.
"""

from __future__ import annotations

import io
import logging
import os
from pathlib import Path
from typing import Annotated, Any

import pytest
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, RemoveMessage
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from sqlalchemy import delete, func, select
from typing_extensions import TypedDict

from langgraph.checkpoint.sqlalchemy import SQLAlchemySaver, transfer
from langgraph.checkpoint.sqlalchemy.errors import CheckpointDecodeError
from langgraph.checkpoint.sqlalchemy.schema import blobs

from ..doors import Door, restarted
from ..graphs import thread

TEXT = "x" * 400


class Chat(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


def chat_graph(saver: Any, answer: Any = None) -> Any:
    """``messages`` with ``add_messages``; the node answers with a 400-character
    message (or what ``answer(state)`` returns)."""

    def reply(state: Chat) -> dict[str, Any]:
        if answer is not None:
            return answer(state)  # type: ignore[no-any-return]
        n = len(state["messages"])
        return {"messages": [AIMessage(f"answer {n} {TEXT}", id=f"a{n}")]}

    g = StateGraph(Chat)
    g.add_node("reply", reply)
    g.add_edge(START, "reply")
    g.add_edge("reply", END)
    return g.compile(checkpointer=saver)


async def chat(door: Door, graph: Any, config: Any, turns: int, start: int = 0) -> list[Any]:
    """``turns`` user turns; the states the graph held after each."""
    held = []
    for i in range(start, start + turns):
        message = HumanMessage(f"turn {i} {TEXT}", id=f"h{i}")
        held.append(await door.invoke(graph, {"messages": [message]}, config))
    return held


def blob_rows(saver: SQLAlchemySaver) -> tuple[int, int, int]:
    """``(rows, pieces, stored bytes)`` of the blobs table."""
    engine = saver.engine.execution_options(schema_translate_map={None: saver.schema})
    with engine.connect() as conn:
        n, pieces, stored = conn.execute(
            select(
                func.count(),
                func.count(blobs.c.base_version),
                func.coalesce(func.sum(func.length(blobs.c.blob)), 0),
            )
        ).one()
    return int(n), int(pieces), int(stored)


async def states(door: Door, graph: Any, config: Any) -> list[list[Any]]:
    """The ``messages`` of every checkpoint of the thread, newest first."""
    return [s.values.get("messages", []) for s in await door.get_state_history(graph, config)]


async def test_a_long_chat_is_stored_as_pieces_and_reads_back_in_a_new_process(
    door: Door, saver_factory: Any, mode: str
) -> None:
    config = thread("long")
    graph = chat_graph(door.saver)
    held = await chat(door, graph, config, 40)
    rows, pieces, stored = blob_rows(door.saver)
    assert pieces > 0 and pieces >= rows // 2  # most versions are pieces
    # Stored bytes: far below the 2 x 40 versions of a growing list stored whole.
    whole = sum(len(door.saver.serde.dumps_typed(h["messages"])[1]) for h in held)
    assert stored < whole / 4
    # storage_stats (CLI stats) tells the bytes stored from the bytes of the values.
    stats = (await door.storage_stats("long"))["lgsa_checkpoint_blobs"]
    assert stats["bytes"] == stored and stats["value_bytes"] > 4 * stored

    door2 = restarted(saver_factory, mode)
    graph2 = chat_graph(door2.saver)
    assert (await door2.get_state(graph2, config)).values == held[-1]
    # Every checkpoint of the history reads back as the graph held it.
    history = await states(door2, graph2, config)
    assert history == await states(door, graph, config)
    assert [len(m) for m in history[:4]] == [80, 79, 78, 78]
    # The new process goes on from there: its new versions extend what it read.
    more = await chat(door2, graph2, config, 5, start=40)
    assert blob_rows(door2.saver)[1] > pieces
    assert (await door.get_state(graph, config)).values == more[-1]


async def test_prune_and_copy_keep_what_a_piece_extends(
    door: Door, saver_factory: Any, mode: str
) -> None:
    config = thread("pruned")
    graph = chat_graph(door.saver)
    held = await chat(door, graph, config, 30)
    await door.copy_thread("pruned", "copy")
    await door.prune(["pruned"], strategy="keep_latest")

    door2 = restarted(saver_factory, mode)
    graph2 = chat_graph(door2.saver)
    assert (await door2.get_state(graph2, config)).values == held[-1]
    copied = await states(door2, graph2, thread("copy"))
    assert copied[0] == held[-1]["messages"] and len(copied) == 90
    # The pruned thread goes on, its new versions extending the kept one.
    more = await chat(door2, graph2, config, 3, start=30)
    assert (await door.get_state(graph, config)).values == more[-1]


def _remove_first(state: Chat) -> dict[str, Any]:
    return {"messages": [RemoveMessage(id=state["messages"][0].id), AIMessage(TEXT, id="r")]}


def _replace_first(state: Chat) -> dict[str, Any]:
    first = state["messages"][0]
    return {"messages": [HumanMessage("replaced " + TEXT, id=first.id)]}


def _change_in_place(state: Chat) -> dict[str, Any]:
    # A node that mutates a stored message object: only the bytes tell.
    state["messages"][0].content = "changed in place " + TEXT
    return {"messages": [AIMessage("after " + TEXT, id=f"c{len(state['messages'])}")]}


@pytest.mark.parametrize(
    "answer", [_remove_first, _replace_first, _change_in_place], ids=lambda f: f.__name__
)
async def test_lists_that_do_not_grow_at_their_end_read_back_exactly(
    door: Door, saver_factory: Any, mode: str, answer: Any
) -> None:
    config = thread("edited")
    graph = chat_graph(door.saver)
    await chat(door, graph, config, 8)
    edited = chat_graph(door.saver, answer)
    held = await chat(door, edited, config, 3, start=8)
    door2 = restarted(saver_factory, mode)
    graph2 = chat_graph(door2.saver)
    assert (await door2.get_state(graph2, config)).values == held[-1]
    assert await states(door2, graph2, config) == await states(door, graph, config)


class Shrinking(TypedDict):
    items: list[str]
    turn: int


async def test_a_shrinking_list_reads_back_exactly(
    door: Door, saver_factory: Any, mode: str
) -> None:
    def step(state: Shrinking) -> dict[str, Any]:
        items, turn = state.get("items") or [], state.get("turn", 0)
        # Grows for 6 turns, then shrinks by one a turn.
        grown = [*items, f"{len(items)} {TEXT}"] if turn < 6 else items[:-1]
        return {"items": grown, "turn": turn + 1}

    g = StateGraph(Shrinking)
    g.add_node("step", step)
    g.add_edge(START, "step")
    g.add_edge("step", END)
    graph = g.compile(checkpointer=door.saver)
    config = thread("shrinking")
    held = [await door.invoke(graph, {}, config) for _ in range(10)]
    assert [len(h["items"]) for h in held] == [1, 2, 3, 4, 5, 6, 5, 4, 3, 2]
    door2 = restarted(saver_factory, mode)
    graph2 = g.compile(checkpointer=door2.saver)
    history = [s.values.get("items") for s in await door2.get_state_history(graph2, config)]
    assert history[0] == held[-1]["items"]
    assert history == [s.values.get("items") for s in await door.get_state_history(graph, config)]


async def test_an_encrypted_serializers_values_are_stored_whole(
    backend: str, saver_factory: Any, mode: str
) -> None:
    key = os.urandom(32)
    saver = saver_factory(serde=EncryptedSerializer.from_pycryptodome_aes(key=key))
    door = Door(saver, mode)
    config = thread("secret")
    graph = chat_graph(saver)
    held = await chat(door, graph, config, 12)
    assert blob_rows(saver)[1] == 0  # an encrypted value never extends another
    door2 = Door(saver_factory(shared=True, serde=saver.serde), mode)
    graph2 = chat_graph(door2.saver)
    assert (await door2.get_state(graph2, config)).values == held[-1]


async def test_a_piece_whose_base_is_gone_is_a_typed_error_naming_the_checkpoint(
    door: Door, caplog: pytest.LogCaptureFixture
) -> None:
    config = thread("damaged")
    graph = chat_graph(door.saver)
    await chat(door, graph, config, 30)
    latest = (await door.get_state(graph, config)).config["configurable"]["checkpoint_id"]
    saver = door.saver
    engine = saver.engine.execution_options(schema_translate_map={None: saver.schema})
    with engine.begin() as conn:  # the whole values the pieces rest on, deleted by hand
        gone = conn.execute(delete(blobs).where(blobs.c.base_version.is_(None))).rowcount
    assert gone > 0
    # A new saver on the same engines: nothing of the thread in its value cache.
    fresh = Door(SQLAlchemySaver(saver.engine, saver.async_engine, schema=saver.schema), door.mode)
    with pytest.raises(CheckpointDecodeError) as e:
        await fresh.get_tuple({"configurable": {"thread_id": "damaged"}})
    assert e.value.part == "channel messages" and "missing" in str(e.value)
    assert e.value.checkpoint_id == latest
    with caplog.at_level(logging.ERROR, logger="langgraph.checkpoint.sqlalchemy"):
        listed = await fresh.list({"configurable": {"thread_id": "damaged"}})
    assert "list() skipped a checkpoint" in caplog.text
    # What is listed is what could be read, never a value rebuilt from the wrong bytes.
    for t in listed:
        assert all(
            m.content.startswith(("turn", "answer"))
            for m in t.checkpoint["channel_values"].get("messages", [])
        )


async def test_a_thread_deleted_and_written_again_never_extends_what_was_deleted(
    door: Door, saver_factory: Any, mode: str
) -> None:
    """The same conversation (same message ids, same bytes) after ``delete_thread`` and
    ``prune``: the saver must not store a piece of a version that is gone."""
    config = thread("again")
    graph = chat_graph(door.saver)
    await chat(door, graph, config, 30)
    await door.delete_thread("again")
    held = await chat(door, graph, config, 32)
    await door.prune(["again"], strategy="delete")
    held = await chat(door, graph, config, 31)
    door2 = restarted(saver_factory, mode)
    assert (await door2.get_state(chat_graph(door2.saver), config)).values == held[-1]


async def test_export_import_and_copy_from_an_official_saver_read_back(
    door: Door, saver_factory: Any, mode: str, tmp_path: Path
) -> None:
    """Values move whole (rebuilt from their pieces); the target stores them as pieces
    again (each put of a thread's transaction extending the one before), and a run that
    goes on there extends them."""
    config = thread("moved")
    held = await chat(door, chat_graph(door.saver), config, 30)
    exported = io.StringIO()
    transfer.export_threads(door.saver, ["moved"], exported)
    await door.delete_thread("moved")
    exported.seek(0)
    imported = restarted(saver_factory, mode)  # another process imports it
    transfer.import_threads(imported.saver, exported)
    graph = chat_graph(imported.saver)
    assert (await imported.get_state(graph, config)).values == held[-1]
    # Stored as pieces too: each put of the import's transaction extends the one before.
    stats = (await imported.storage_stats("moved"))["lgsa_checkpoint_blobs"]
    assert stats["value_bytes"] > 4 * stats["bytes"]
    more = await chat(imported, graph, config, 3, start=30)
    assert (await door.get_state(chat_graph(door.saver), config)).values == more[-1]

    official_config = thread("official")
    with SqliteSaver.from_conn_string(str(tmp_path / "official.db")) as official:
        source = chat_graph(official)
        for i in range(30):
            message = HumanMessage(f"turn {i} {TEXT}", id=f"h{i}")
            source.invoke({"messages": [message]}, official_config)
        want = source.get_state(official_config).values
        transfer.copy_threads(official, door.saver)
    graph = chat_graph(door.saver)
    assert (await door.get_state(graph, official_config)).values == want
    stats = (await door.storage_stats("official"))["lgsa_checkpoint_blobs"]
    assert stats["value_bytes"] > 4 * stats["bytes"]
    more = await chat(door, graph, official_config, 3, start=30)
    door2 = restarted(saver_factory, mode)
    assert (await door2.get_state(chat_graph(door2.saver), official_config)).values == more[-1]
