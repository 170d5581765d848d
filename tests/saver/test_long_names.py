"""Names as long as LangGraph makes them: thread ids up to 1,000 characters and
namespaces up to 2,000 (about 30 levels of nested subgraphs), multi-byte text included,
on every backend and door, through every operation of the saver, the command line and
the transfer from the official savers. One character more is a CheckpointConfigError
before anything is written.

Names longer than the key columns (255 characters) are keyed by a digest with the full
text kept beside it (see ``schema.name_key``); the tests check that no operation reports
a digest, mixes two names, or loses a row.
"""

from __future__ import annotations

import io
import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.base import BaseCheckpointSaver, create_checkpoint, empty_checkpoint
from langgraph.types import Command, interrupt
from typing_extensions import TypedDict

from langgraph.checkpoint.sqlalchemy import CheckpointConfigError, SQLAlchemySaver, cli
from langgraph.checkpoint.sqlalchemy.schema import (
    CHECKPOINT_NS_MAX_LENGTH,
    NAME_KEY_LENGTH,
    THREAD_ID_MAX_LENGTH,
    name_key,
)
from langgraph.checkpoint.sqlalchemy.transfer import (
    copy_threads,
    export_threads,
    import_threads,
    open_source,
)

from ..checkpoints import config as make_config
from ..doors import Door
from ..graphs import chain

#: 1,000 characters of emoji and CJK text (4-byte and 3-byte UTF-8).
LONG_THREAD = ("🧵線程😀スレッド🚀" * 200)[:THREAD_ID_MAX_LENGTH]
#: The same length, one character different at the end: another thread.
TWIN_THREAD = LONG_THREAD[:-1] + "漢"
#: A third long thread (copy target).
COPY_THREAD = LONG_THREAD[::-1]
#: 2,000 characters of namespace, segments as LangGraph writes them.
LONG_NS = ("子グラフ_ノード🌳:0c1d2e3f-aaaa-bbbb-cccc-0123456789ab|" * 60)[
    :CHECKPOINT_NS_MAX_LENGTH
]
BIG = "b" * 50_000  # goes to the blobs table, not inline


def cfg(thread_id: str, ns: str | None = None, checkpoint_id: str | None = None) -> Any:
    return make_config(thread_id, checkpoint_id, ns)


async def put_chain(
    door: Door, thread_id: str, ns: str, steps: int, run_id: str
) -> list[dict[str, Any]]:
    """``steps`` checkpoints in a chain, each with a small and a large channel value,
    the last one with two pending writes."""
    config = cfg(thread_id, ns)
    checkpoint = empty_checkpoint()
    stored = []
    for step in range(steps):
        checkpoint = create_checkpoint(checkpoint, None, step)
        version = door.saver.get_next_version(
            checkpoint["channel_versions"].get("n") if step else None, None
        )
        checkpoint["channel_values"] = {"n": step, "big": BIG + str(step)}
        checkpoint["channel_versions"] = {"n": version, "big": version}
        config = await door.put(
            config,
            checkpoint,
            {"source": "loop", "step": step, "run_id": run_id},
            {"n": version, "big": version},
        )
        stored.append(config)
    await door.put_writes(config, [("n", 99), ("big", BIG)], "task-1")
    return stored


def threads_of(tuples: list[Any]) -> set[str]:
    return {t.config["configurable"]["thread_id"] for t in tuples}


async def test_long_names_through_every_saver_operation(
    door: Door, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Small pages, so that list() goes on from a cursor holding digest keys.
    monkeypatch.setattr("langgraph.checkpoint.sqlalchemy.saver.LIST_PAGE_SIZE", 2)
    saver = door.saver
    root = await put_chain(door, LONG_THREAD, "", 3, "run-long")
    deep = await put_chain(door, LONG_THREAD, LONG_NS, 2, "run-long")
    twin = await put_chain(door, TWIN_THREAD, LONG_NS, 2, "run-twin")
    short = await put_chain(door, "short", "", 1, "run-short")
    assert root[-1]["configurable"] == {
        "thread_id": LONG_THREAD,
        "checkpoint_ns": "",
        "checkpoint_id": root[-1]["configurable"]["checkpoint_id"],
    }

    # get_tuple: latest, by id, in the long namespace; values, writes, parent verbatim
    for ask, want, parent in (
        (cfg(LONG_THREAD), root[-1], root[-2]),
        (root[1], root[1], root[0]),
        (cfg(LONG_THREAD, LONG_NS), deep[-1], deep[0]),
        (cfg(TWIN_THREAD, LONG_NS), twin[-1], twin[0]),
    ):
        got = await door.get_tuple(ask)
        assert got is not None
        assert got.config == want
        assert got.parent_config == parent
        assert got.checkpoint["channel_values"]["big"].startswith(BIG)
    got = await door.get_tuple(cfg(LONG_THREAD, LONG_NS))
    assert got is not None and got.pending_writes == [("task-1", "n", 99), ("task-1", "big", BIG)]
    assert await door.get_tuple(cfg(LONG_THREAD, LONG_NS[:-1])) is None
    assert await door.get_tuple(cfg(LONG_THREAD[:-1])) is None

    # list: one thread, one namespace, everything (paged through digest keys)
    listed = await door.list(cfg(LONG_THREAD))
    assert [t.config for t in listed] == sorted(
        root + deep, key=lambda c: c["configurable"]["checkpoint_id"], reverse=True
    )
    assert [t.config for t in await door.list(cfg(LONG_THREAD, LONG_NS))] == deep[::-1]
    assert [t.config for t in await door.list(cfg(TWIN_THREAD))] == twin[::-1]
    everything = await door.list(None)
    assert threads_of(everything) == {LONG_THREAD, TWIN_THREAD, "short"}
    assert len(everything) == 8
    assert all(t.checkpoint["channel_values"]["big"].startswith(BIG) for t in everything)
    assert [t.config for t in await door.list(None, filter={"run_id": "run-twin"})] == twin[::-1]

    # get_delta_channel_history: as the base class computes it from get_tuple/list
    for config in (deep[-1], root[-1]):
        got_history = await door.get_delta_channel_history(config=config, channels=["n"])
        want_history = BaseCheckpointSaver.get_delta_channel_history(
            saver, config=config, channels=["n"]
        )
        assert got_history == want_history

    # list_threads and storage_stats report the names, never a digest
    infos = {t.thread_id: t for t in await door.call("list_threads", limit=None)}
    assert set(infos) == {LONG_THREAD, TWIN_THREAD, "short"}
    assert (infos[LONG_THREAD].checkpoints, infos[LONG_THREAD].namespaces) == (5, 2)
    stats = await door.call("storage_stats", LONG_THREAD)
    assert stats["lgsa_checkpoints"]["rows"] == 5
    assert stats["lgsa_checkpoint_writes"]["rows"] == 4
    assert stats["lgsa_checkpoint_blobs"]["rows"] > 0

    # lock_thread
    if door.is_async:
        async with saver.alock_thread(LONG_THREAD, timeout=5):
            pass
    else:
        with saver.lock_thread(LONG_THREAD, timeout=5):
            pass

    # copy_thread to another long id
    await door.copy_thread(LONG_THREAD, COPY_THREAD)
    copied = await door.list(cfg(COPY_THREAD))
    assert [t.config["configurable"]["checkpoint_id"] for t in copied] == [
        t.config["configurable"]["checkpoint_id"] for t in listed
    ]
    assert threads_of(copied) == {COPY_THREAD}
    got = await door.get_tuple(cfg(COPY_THREAD, LONG_NS))
    assert got is not None and got.config["configurable"]["checkpoint_ns"] == LONG_NS
    assert got.pending_writes == [("task-1", "n", 99), ("task-1", "big", BIG)]
    assert got.checkpoint["channel_values"]["big"] == BIG + "1"

    # prune: the newest checkpoint of each namespace stays, with its values and writes
    await door.prune([LONG_THREAD])
    kept = await door.list(cfg(LONG_THREAD))
    assert sorted(t.config["configurable"]["checkpoint_id"] for t in kept) == sorted(
        [root[-1]["configurable"]["checkpoint_id"], deep[-1]["configurable"]["checkpoint_id"]]
    )
    got = await door.get_tuple(cfg(LONG_THREAD))
    assert got is not None and got.checkpoint["channel_values"]["big"] == BIG + "2"
    assert len(await door.list(cfg(COPY_THREAD))) == 5  # the copy is untouched

    # delete_for_runs: the twin's run only
    await door.delete_for_runs(["run-twin"])
    assert await door.list(cfg(TWIN_THREAD)) == []
    assert (await door.call("storage_stats", TWIN_THREAD))["lgsa_checkpoint_writes"]["rows"] == 0
    assert len(await door.list(cfg(LONG_THREAD))) == 2

    # delete_thread
    await door.delete_thread(LONG_THREAD)
    assert await door.get_tuple(cfg(LONG_THREAD)) is None
    gone = await door.call("storage_stats", LONG_THREAD)
    assert all(table["rows"] == 0 for table in gone.values()), gone
    assert threads_of(await door.list(None)) == {COPY_THREAD, "short"}
    got = await door.get_tuple(cfg("short"))
    assert got is not None and got.config == short[0]


async def test_one_character_over_the_limit_is_refused_and_nothing_is_stored(
    door: Door,
) -> None:
    checkpoint = empty_checkpoint()
    too_long_thread = "😀" * (THREAD_ID_MAX_LENGTH + 1)
    too_long_ns = "漢" * (CHECKPOINT_NS_MAX_LENGTH + 1)
    for config, limit in (
        (cfg(too_long_thread), str(THREAD_ID_MAX_LENGTH)),
        (cfg("t", too_long_ns), str(CHECKPOINT_NS_MAX_LENGTH)),
    ):
        with pytest.raises(CheckpointConfigError, match=limit):
            await door.put(config, checkpoint, {}, {})
        with_id = {"configurable": {**config["configurable"], "checkpoint_id": checkpoint["id"]}}
        with pytest.raises(CheckpointConfigError, match=limit):
            await door.put_writes(with_id, [("a", 1)], "task")
        with pytest.raises(CheckpointConfigError, match=limit):
            await door.get_tuple(config)
        with pytest.raises(CheckpointConfigError, match=limit):
            await door.list(config)
    with pytest.raises(CheckpointConfigError, match=str(THREAD_ID_MAX_LENGTH)):
        await door.delete_thread(too_long_thread)
    with pytest.raises(CheckpointConfigError, match=str(THREAD_ID_MAX_LENGTH)):
        await door.copy_thread("t", too_long_thread)
    assert await door.list(None) == []
    stats = await door.call("storage_stats")
    assert all(table["rows"] == 0 for table in stats.values()), stats


async def test_a_name_that_looks_like_a_digest_key_is_its_own_thread(door: Door) -> None:
    """The key of a long name is a string a user could pass too: both are stored apart."""
    lookalike = name_key(LONG_THREAD)
    assert lookalike != LONG_THREAD and len(lookalike) <= NAME_KEY_LENGTH
    long_cfg = await put_chain(door, LONG_THREAD, "", 1, "r1")
    look_cfg = await put_chain(door, lookalike, lookalike, 1, "r2")
    assert threads_of(await door.list(None)) == {LONG_THREAD, lookalike}
    got = await door.get_tuple(cfg(lookalike, lookalike))
    assert got is not None and got.config == look_cfg[0]
    assert [t.config for t in await door.list(cfg(LONG_THREAD))] == long_cfg
    await door.delete_thread(lookalike)
    assert [t.config for t in await door.list(None)] == long_cfg


# -- a graph with subgraphs nested 10 deep --------------------------------------------------


class Nested(TypedDict):
    value: str


LEVELS = 10


def nested_graph(saver: BaseCheckpointSaver[Any]) -> Any:
    """Subgraphs nested :data:`LEVELS` deep (node names of 20 characters); the deepest
    one asks for an answer with ``interrupt()``. Each level appends its mark."""

    def deepest(state: Nested) -> dict[str, Any]:
        answer = interrupt("deep approve?")
        return {"value": f"{state['value']}+{answer}"}

    graph = chain(Nested, ("deepest_question_nd", deepest))
    for level in range(LEVELS - 1, -1, -1):

        def mark(state: Nested, level: int = level) -> dict[str, Any]:
            return {"value": f"{state['value']}{level}"}

        graph = chain(
            Nested,
            (f"mark_level_{level:02d}_node", mark),
            (f"nested_level_{level:02d}_sg", graph),
            checkpointer=saver if level == 0 else None,
        )
    return graph


async def test_ten_nested_subgraphs_interrupt_and_resume(
    door: Door, saver_factory: Any, mode: str
) -> None:
    config = cfg(LONG_THREAD)
    graph = nested_graph(door.saver)
    first = await door.invoke(graph, {"value": ""}, config)
    assert [i.value for i in first["__interrupt__"]] == ["deep approve?"]

    namespaces = {t.config["configurable"]["checkpoint_ns"] for t in await door.list(config)}
    deepest = max(namespaces, key=len)
    assert deepest.count("|") == LEVELS - 1 and len(deepest) > NAME_KEY_LENGTH
    state = await door.get_state(graph, config, subgraphs=True)
    for _ in range(LEVELS):
        [task] = state.tasks
        state = task.state
    assert state.config["configurable"]["checkpoint_ns"] == deepest
    assert [i.value for i in state.tasks[0].interrupts] == ["deep approve?"]

    # resumed by "a new process": only the database carries the state
    door2 = Door(saver_factory(shared=True), mode)
    done = await door2.invoke(nested_graph(door2.saver), Command(resume="ok"), config)
    assert "__interrupt__" not in done
    assert done["value"] == "0123456789+ok"
    assert (await door.get_state(graph, config)).next == ()


# -- command line, export/import, copy from the official savers ---------------------------


def _url_args(saver: SQLAlchemySaver) -> list[str]:
    url = saver.engine.url.render_as_string(hide_password=False)
    return ["--url", url, *(["--schema", saver.schema] if saver.schema else [])]


async def test_cli_threads_and_export_import_with_long_names(
    door: Door, backend: str, capsys: pytest.CaptureFixture[str]
) -> None:
    await put_chain(door, LONG_THREAD, LONG_NS, 2, "r")
    await put_chain(door, "short", "", 1, "r")

    # export, delete, import back: the same checkpoints and writes
    before = [(t.config, t.pending_writes) for t in await door.list(cfg(LONG_THREAD))]
    dump = io.StringIO()
    exported = export_threads(door.saver, [LONG_THREAD], dump)
    assert exported.checkpoints == 2
    await door.delete_thread(LONG_THREAD)
    report = import_threads(door.saver, io.StringIO(dump.getvalue()))
    assert report.checkpoints_imported == 2
    assert [(t.config, t.pending_writes) for t in await door.list(cfg(LONG_THREAD))] == before

    if backend == "sqlite-memory":
        return  # the command line cannot reach another process's memory
    args = _url_args(door.saver)
    capsys.readouterr()
    assert cli.main([*args, "--json", "threads", "list"]) == 0
    listed = json.loads(capsys.readouterr().out)["threads"]
    assert {t["thread_id"] for t in listed} == {LONG_THREAD, "short"}
    assert cli.main([*args, "--json", "threads", "show", LONG_THREAD, "--ns", LONG_NS]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert [h["checkpoint_ns"] for h in shown] == [LONG_NS, LONG_NS]
    assert cli.main([*args, "threads", "delete", LONG_THREAD, "--yes"]) == 0
    capsys.readouterr()
    assert await door.list(cfg(LONG_THREAD)) == []
    assert threads_of(await door.list(None)) == {"short"}


def _official_source(kind: str, tmp_path: Path, new_pg_database: Callable[[], str]) -> str:
    """A database of an official saver, holding the nested graph stopped at its
    interrupt on :data:`LONG_THREAD`."""
    if kind == "sqlite":
        from langgraph.checkpoint.sqlite import SqliteSaver

        where = str(tmp_path / "official.sqlite")
        conn = sqlite3.connect(where, check_same_thread=False)
        try:
            official = SqliteSaver(conn)
            official.setup()
            nested_graph(official).invoke({"value": ""}, cfg(LONG_THREAD))
        finally:
            conn.close()
        return where
    from langgraph.checkpoint.postgres import PostgresSaver
    from sqlalchemy.engine import make_url

    where = new_pg_database()
    libpq = make_url(where).set(drivername="postgresql").render_as_string(False)
    with PostgresSaver.from_conn_string(libpq) as official:
        official.setup()
        nested_graph(official).invoke({"value": ""}, cfg(LONG_THREAD))
    return where


@pytest.mark.parametrize("source_kind", ["sqlite", "postgres"])
async def test_copy_from_official_saver_with_long_names(
    saver: SQLAlchemySaver,
    source_kind: str,
    tmp_path: Path,
    pg_database: Callable[[], str],
) -> None:
    where = _official_source(source_kind, tmp_path, pg_database)
    with open_source(where) as source:
        report = copy_threads(source, saver)
        assert report.mismatches == []
        want = [t.config for t in source.list(cfg(LONG_THREAD))]
    got = [t.config for t in saver.list(cfg(LONG_THREAD))]
    assert sorted(got, key=json.dumps) == sorted(want, key=json.dumps)
    assert max(len(c["configurable"]["checkpoint_ns"]) for c in got) > NAME_KEY_LENGTH
    done = nested_graph(saver).invoke(Command(resume="ok"), cfg(LONG_THREAD))
    assert done["value"] == "0123456789+ok"
