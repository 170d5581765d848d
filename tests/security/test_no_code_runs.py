"""Nothing written into the database, or into a file handed to our tools, runs code.

The payload: a msgpack extension naming ``os.system("touch MARKER")``, as LangGraph's
``JsonPlusSerializer`` writes an object it rebuilds by calling its class. It is planted in
every stored column that holds serialised bytes (the checkpoint document, a value inline
in ``inline_values``, a blob, a pending write, the ``inline_values`` container itself) and
in crafted export and official-saver files.

* Strict mode (``strict=True``): every saver method, sync and async, on every backend,
  runs nothing; the forged object reads back as its stored fields, as LangGraph's strict
  serializer returns it, or with ``strict_decode=True`` ``get_tuple`` raises
  ``CheckpointDecodeError`` and ``list`` skips the row.
* Default mode: the maintenance methods (``prune``, ``delete_thread``, ``copy_thread``,
  ``list_threads``, ``storage_stats``) run nothing either; ``get_tuple`` runs the payload
  (LangGraph's permissive default, measured in tests/security/test_forged.py).
* Every CLI command, the copy from ours and from an official ``SqliteSaver`` file, export
  and import run nothing, and move values byte for byte.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import ormsgpack
import pytest
from langgraph.checkpoint.serde.jsonplus import EXT_CONSTRUCTOR_SINGLE_ARG
from sqlalchemy import select, update

from langgraph.checkpoint.sqlalchemy import CheckpointDecodeError, SQLAlchemySaver, transfer
from langgraph.checkpoint.sqlalchemy.schema import blobs, checkpoints, writes

from ..doors import Door
from .test_forged import checkpoint_row, raw
from .test_hostile import cfg, make_checkpoint

PROG = [sys.executable, "-m", "langgraph.checkpoint.sqlalchemy"]
THREAD = "t-forged"
BIG = 17 * 1024  # over the inline limit: stored in the blobs table

PLACES = ["checkpoint", "inline", "blob", "write", "inline_values"]


def payload(marker: Path) -> ormsgpack.Ext:
    """The extension LangGraph rebuilds by calling ``os.system("touch <marker>")``."""
    return ormsgpack.Ext(
        EXT_CONSTRUCTOR_SINGLE_ARG, ormsgpack.packb(("os", "system", f"touch {marker}"))
    )


def evil(marker: Path) -> bytes:
    return ormsgpack.packb(payload(marker))


async def plant(door: Door, place: str, marker: Path) -> dict[str, Any]:
    """Two checkpoints of THREAD (values inline and in a blob, a write each); the payload
    replaces ``place`` of the newest, whose metadata also asks a prune to read its
    document (a DeltaChannel channel without a value)."""
    parent = None
    config: dict[str, Any] = {}
    for n in range(2):
        cp, versions = make_checkpoint({"small": f"s{n}", "big": f"{n}" * BIG})
        cp["channel_versions"]["ghost"] = "1"
        metadata = {"step": n, "counters_since_delta_snapshot": {"ghost": [1, 1]}}
        config = await door.put(parent or cfg(THREAD), cp, metadata, versions)
        await door.put_writes(config, [("out", f"w{n}")], "task")
        parent = config
    checkpoint_id = config["configurable"]["checkpoint_id"]
    row = checkpoint_row(THREAD, checkpoint_id)
    with raw(door.saver) as conn:
        if place == "checkpoint":
            doc = ormsgpack.unpackb(
                conn.execute(select(checkpoints.c.checkpoint).where(row)).one()[0]
            )
            doc["channel_versions"]["ghost"] = "1"
            doc["evil"] = payload(marker)
            conn.execute(update(checkpoints).where(row).values(checkpoint=ormsgpack.packb(doc)))
        elif place == "inline":
            inline = ormsgpack.packb([1, [["small", "msgpack", evil(marker)]]])
            conn.execute(update(checkpoints).where(row).values(inline_values=inline))
        elif place == "inline_values":
            container = ormsgpack.packb([1, [payload(marker)]])
            conn.execute(update(checkpoints).where(row).values(inline_values=container))
        elif place == "blob":
            version = conn.execute(select(checkpoints.c.value_versions).where(row)).one()[0]
            conn.execute(
                update(blobs)
                .where(blobs.c.thread_id == THREAD, blobs.c.version == version["big"])
                .values(blob=evil(marker))
            )
        else:
            conn.execute(
                update(writes)
                .where(writes.c.thread_id == THREAD, writes.c.checkpoint_id == checkpoint_id)
                .values(blob=evil(marker))
            )
    return config


@pytest.mark.parametrize("strict_decode", [False, True], ids=["as-data", "refused"])
@pytest.mark.parametrize("place", PLACES)
async def test_strict_saver_runs_nothing_on_any_method(
    saver_factory: Any, mode: str, tmp_path: Path, place: str, strict_decode: bool
) -> None:
    """Strict mode never imports or calls what a forged row names. By default the row
    reads back as LangGraph's strict serializer returns it (the blocked object as its
    stored fields); with ``strict_decode=True`` it is refused: ``get_tuple`` raises
    CheckpointDecodeError and ``list()`` skips the row."""
    saver = saver_factory(strict=True, strict_decode=strict_decode)
    assert saver.strict and saver.strict_decode is strict_decode
    door = Door(saver, mode)
    marker = tmp_path / "MARKER"
    config = await plant(door, place, marker)

    if strict_decode:
        with pytest.raises(CheckpointDecodeError):
            await door.get_tuple(config)
        with pytest.raises(CheckpointDecodeError):
            await door.get_tuple(cfg(THREAD))  # the latest is the forged one
        listed = await door.list(cfg(THREAD))
        assert len(listed) == 1  # the parent; the forged one skipped and logged
        assert len(await door.list(None)) == 1
    else:
        # Blocked by the allowlist: handed back as data (or, where the payload replaces
        # a whole document, refused as damaged); nothing runs either way.
        with contextlib.suppress(CheckpointDecodeError):
            await door.get_tuple(config)
        with contextlib.suppress(CheckpointDecodeError):
            await door.get_tuple(cfg(THREAD))
        assert len(await door.list(cfg(THREAD))) >= 1
    with contextlib.suppress(CheckpointDecodeError):  # a forged value on the walk: refused
        await door.get_delta_channel_history(config=config, channels=["small", "big", "out"])
    assert not marker.exists(), place

    await door.call("list_threads")
    await door.call("storage_stats")
    await door.call("copy_thread", THREAD, "t-copy")
    await door.call("prune", [THREAD], strategy="keep_latest")
    await door.call("delete_thread", THREAD)
    assert not marker.exists(), place


@pytest.mark.parametrize("place", PLACES)
async def test_default_saver_maintenance_runs_nothing(
    saver_factory: Any, mode: str, tmp_path: Path, place: str
) -> None:
    """LangGraph's permissive default rebuilds what ``get_tuple`` reads; the
    maintenance methods decode no value and no object, so they run nothing."""
    door = Door(saver_factory(strict=False), mode)
    marker = tmp_path / "MARKER"
    await plant(door, place, marker)
    await door.call("list_threads")
    await door.call("storage_stats")
    await door.call("copy_thread", THREAD, "t-copy")
    await door.call("prune", [THREAD, "t-copy"], strategy="keep_latest")
    await door.call("delete_thread", THREAD)
    assert not marker.exists(), place


# -- the operator's tools -----------------------------------------------------------------


def cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*PROG, *args], capture_output=True, text=True, input=stdin, timeout=300, check=False
    )


#: Places whose forged value is data a copy moves (a forged ``inline_values`` container
#: is a damaged row: copy and export stop at it with CheckpointDecodeError).
MOVABLE = [p for p in PLACES if p != "inline_values"]


def forged_database(
    tmp_path: Path, marker: Path, places: list[str] = PLACES
) -> tuple[str, dict[str, str]]:
    """A SQLite file of ours with one thread per place, the payload planted there;
    returns its URL and ``{thread: newest checkpoint id}``."""
    import asyncio

    url = f"sqlite:///{tmp_path / 'forged.sqlite'}"
    newest: dict[str, str] = {}
    saver = SQLAlchemySaver.from_conn_string(url, strict=False)
    saver.setup()
    door = Door(saver, "sync")
    global THREAD
    try:
        for place in places:
            THREAD = f"t-{place}"
            config = asyncio.run(plant(door, place, marker))
            newest[THREAD] = config["configurable"]["checkpoint_id"]
    finally:
        THREAD = "t-forged"
        saver.close()
    return url, newest


def test_every_cli_command_runs_nothing(tmp_path: Path) -> None:
    marker = tmp_path / "MARKER"
    url, newest = forged_database(tmp_path, marker)
    other = f"sqlite:///{tmp_path / 'other.sqlite'}"
    dump = tmp_path / "dump.jsonl"
    commands: list[tuple[str, ...]] = [
        ("--url", url, "threads", "list"),
        ("--url", url, "stats"),
        ("--url", url, "current"),
        *(("--url", url, "threads", "show", t) for t in newest),
        *(("--url", url, "threads", "show", t, "--checkpoint", c) for t, c in newest.items()),
        *(("--url", url, "copy-thread", t, f"{t}-copy") for t in newest),
        ("--url", url, "export", *newest, "-o", str(dump)),
        ("copy", "--from", url, "--to", other),
        ("--url", other, "import", str(dump), "--into-existing"),
        ("--url", url, "prune", *newest, "--yes"),
        ("--url", url, "threads", "delete", *newest, "--yes"),
    ]
    for argv in commands:
        done = cli(*argv)
        assert not marker.exists(), (argv, done.stdout, done.stderr)
        assert "Traceback" not in done.stderr, (argv, done.stderr)
    shown = cli("--url", other, "threads", "show", "t-blob", "--checkpoint", newest["t-blob"])
    assert shown.returncode == 0, shown.stderr
    assert '"type": "os.system"' in shown.stdout  # shown as data, not run
    assert not marker.exists()


def stored_values(saver: SQLAlchemySaver) -> set[tuple[Any, ...]]:
    """Every stored value as ``(thread, checkpoint, channel, type, bytes)`` (inline or in
    the blobs table: where a value lives is the saver's choice) and every write as
    ``("write", thread, checkpoint, task, idx, channel, type, bytes)``."""
    from langgraph.checkpoint.sqlalchemy._codec import inline as _inline

    found: set[tuple[Any, ...]] = set()
    with raw(saver) as conn:
        stored_blobs = {
            (r.thread_id, r.channel, r.version): (r.type, bytes(r.blob or b""))
            for r in conn.execute(select(blobs))
        }
        for r in conn.execute(select(checkpoints)):
            inline = _inline.unpack(r.inline_values)
            for ch, version in (r.value_versions or {}).items():
                if ch in inline:
                    t, b = inline[ch]
                    found.add((r.thread_id, r.checkpoint_id, ch, t, bytes(b or b"")))
                else:
                    found.add(
                        (
                            r.thread_id,
                            r.checkpoint_id,
                            ch,
                            *stored_blobs[(r.thread_id, ch, version)],
                        )
                    )
        for r in conn.execute(select(writes)):
            key = (r.thread_id, r.checkpoint_id, r.task_id, r.idx, r.channel)
            found.add(("write", *key, r.type, bytes(r.blob or b"")))
    return found


def test_copy_and_export_import_move_values_byte_for_byte(tmp_path: Path) -> None:
    """A thread copied, or exported and imported, holds the same bytes in every value,
    forged or not (nothing rebuilt, nothing re-encoded differently)."""
    from ..transfer.test_transfer import our_saver, run_graphs

    marker = tmp_path / "MARKER"
    url, _ = forged_database(tmp_path, marker, MOVABLE)
    with our_saver(url) as source:
        run_graphs(source)  # real values too: messages, interrupts, errors
        before = stored_values(source)
        with our_saver(f"sqlite:///{tmp_path / 'copy.sqlite'}") as target:
            transfer.copy_threads(source, target)
            assert stored_values(target) == before
        dump = tmp_path / "dump.jsonl"
        with dump.open("w") as fp:
            transfer.export_threads(source, None, fp)
    with our_saver(f"sqlite:///{tmp_path / 'imported.sqlite'}") as target, dump.open() as fp:
        transfer.import_threads(target, fp)
        assert stored_values(target) == before
    assert not marker.exists()


def test_import_refuses_existing_threads_and_restricts(tmp_path: Path) -> None:
    """A crafted file naming a live thread cannot plant a checkpoint in it without
    --into-existing; --thread restricts the import; the file's payload never runs."""
    marker = tmp_path / "MARKER"
    url, newest = forged_database(tmp_path, marker, MOVABLE)
    dump = tmp_path / "dump.jsonl"
    assert cli("--url", url, "export", *newest, "-o", str(dump)).returncode == 0
    target = f"sqlite:///{tmp_path / 'target.sqlite'}"
    with SQLAlchemySaver.from_conn_string(target) as saver:
        saver.setup()
        cp, versions = make_checkpoint({"v": "live"})
        saver.put(cfg("t-blob"), cp, {}, versions)  # a live thread of the same id
    planted = cli("--url", target, "import", str(dump))
    assert planted.returncode == 1 and "t-blob" in planted.stderr, planted.stderr
    with SQLAlchemySaver.from_conn_string(target) as saver:
        assert [t.thread_id for t in saver.list_threads()] == ["t-blob"]
    other = next(t for t in newest if t != "t-blob")
    first = cli("--url", target, "import", str(dump), "--thread", other, "--json")
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout)["thread_ids"] == [other]
    with SQLAlchemySaver.from_conn_string(target) as saver:
        assert sorted(t.thread_id for t in saver.list_threads()) == sorted(["t-blob", other])
    unknown = cli("--url", target, "import", str(dump), "--thread", "nope")
    assert unknown.returncode == 1 and "not in the file" in unknown.stderr
    assert not marker.exists()


CRAFTED_V1 = {"format": "langgraph-checkpoint-sqlalchemy/jsonl", "version": 1}


def test_crafted_import_file_runs_nothing(tmp_path: Path) -> None:
    """Version 1 (values inside the document) and 2 (values apart) files whose
    document, values and writes carry the payload: imported as data (they have no end
    line: --allow-incomplete), run by nothing; a saver with strict decoding then refuses
    the values with CheckpointDecodeError."""
    import base64

    from langgraph.checkpoint.base import empty_checkpoint

    marker = tmp_path / "MARKER"

    def typed(data: bytes) -> dict[str, str]:
        return {"type": "msgpack", "data": base64.b64encode(data).decode()}

    lines = []
    for version, thread in ((1, "v1"), (2, "v2")):
        cp = empty_checkpoint()
        cp["channel_versions"] = {"x": "1"}
        doc = {**cp, "evil": payload(marker)}
        record: dict[str, Any] = {
            "thread_id": thread,
            "checkpoint_ns": "",
            "checkpoint_id": cp["id"],
            "parent_checkpoint_id": None,
            "metadata": {"step": 999},
            "pending_writes": [
                {
                    "task_id": "t",
                    "task_path": "",
                    "channel": "x",
                    "idx": 0,
                    "value": typed(evil(marker)),
                }
            ],
        }
        if version == 1:
            record["checkpoint"] = typed(
                ormsgpack.packb({**doc, "channel_values": {"x": payload(marker)}})
            )
        else:
            record["checkpoint"] = typed(ormsgpack.packb(doc))
            record["channel_values"] = {"x": typed(evil(marker))}
        lines.append(
            json.dumps({**CRAFTED_V1, "version": version}) + "\n" + json.dumps(record) + "\n"
        )
    target = f"sqlite:///{tmp_path / 'target.sqlite'}"
    for text in lines:
        done = cli("--url", target, "import", "-", "--allow-incomplete", stdin=text)
        assert done.returncode == 0, done.stderr
        assert not marker.exists()
    with SQLAlchemySaver.from_conn_string(target, strict=True, strict_decode=True) as saver:
        for thread in ("v1", "v2"):
            with pytest.raises(CheckpointDecodeError):
                saver.get_tuple(cfg(thread))
    assert not marker.exists()


def test_copy_from_a_crafted_official_sqlite_file_runs_nothing(tmp_path: Path) -> None:
    from langgraph.checkpoint.base import empty_checkpoint
    from langgraph.checkpoint.sqlite import SqliteSaver

    marker = tmp_path / "MARKER"
    path = tmp_path / "official.sqlite"
    conn = sqlite3.connect(path, check_same_thread=False)
    official = SqliteSaver(conn)
    cp = empty_checkpoint()
    cp["channel_values"] = {"x": "harmless"}
    cp["channel_versions"] = {"x": "1"}
    config = official.put(cfg("off"), cp, {"step": 1}, {"x": "1"})
    official.put_writes(config, [("x", "harmless")], "task")
    forged_doc = ormsgpack.packb({**cp, "channel_values": {"x": payload(marker)}})
    conn.execute("UPDATE checkpoints SET checkpoint = ?", (forged_doc,))
    conn.execute("UPDATE writes SET value = ?", (evil(marker),))
    conn.commit()
    conn.close()
    target = f"sqlite:///{tmp_path / 'target.sqlite'}"
    done = cli("copy", "--from", str(path), "--to", target)
    assert done.returncode == 0, done.stderr
    assert not marker.exists()
    with SQLAlchemySaver.from_conn_string(target, strict=True) as saver:
        with contextlib.suppress(CheckpointDecodeError):  # read as data or refused
            saver.get_tuple(cfg("off"))
        assert not marker.exists()
        saver.strict_decode = True
        with pytest.raises(CheckpointDecodeError):
            saver.get_tuple(cfg("off"))
    assert not marker.exists()


# -- strict mode end to end, across processes ----------------------------------------------

GRAPH = textwrap.dedent(
    """
    import sys
    from dataclasses import dataclass
    from pydantic import BaseModel
    from langgraph.graph import StateGraph, START, END
    from langgraph.types import interrupt, Command
    from langgraph.checkpoint.sqlalchemy import SQLAlchemySaver

    @dataclass
    class Booking:
        hotel: str
        nights: int

    class State(BaseModel):
        booking: Booking | None = None
        answer: str = ""

    def book(state: State) -> dict:
        return {"booking": Booking("Ritz", 3)}

    def ask(state: State) -> dict:
        return {"answer": interrupt("confirm?")}

    builder = StateGraph(State)
    builder.add_node("book", book)
    builder.add_node("ask", ask)
    builder.add_edge(START, "book")
    builder.add_edge("book", "ask")
    builder.add_edge("ask", END)
    saver = SQLAlchemySaver.from_conn_string(sys.argv[1])
    assert saver.strict, "LANGGRAPH_STRICT_MSGPACK=true makes the saver strict"
    saver.setup()
    graph = builder.compile(checkpointer=saver)
    config = {"configurable": {"thread_id": "t"}}
    if sys.argv[2] == "start":
        graph.invoke({}, config)
    else:
        out = graph.invoke(Command(resume="yes"), config)
        booking = out["booking"]
        assert type(booking).__name__ == "Booking" and booking.nights == 3, out
        print("RESUMED", booking.hotel, out["answer"])
    """
)


def test_strict_graph_resumes_across_processes_and_refuses_a_forged_row(tmp_path: Path) -> None:
    """LangGraph's strict switch (LANGGRAPH_STRICT_MSGPACK=true) makes our saver strict,
    and ``graph.compile`` passes the graph's state types through ``with_allowlist``: a
    pydantic state holding a dataclass is rebuilt in a second process, while a row naming
    ``os.system`` is never called: it reads back as data, as LangGraph's serializer
    returns it."""
    import os

    script = tmp_path / "graph.py"
    script.write_text(GRAPH)
    url = f"sqlite:///{tmp_path / 'strict.sqlite'}"
    env = {**os.environ, "LANGGRAPH_STRICT_MSGPACK": "true"}
    env.pop("LANGGRAPH_CHECKPOINT_STRICT", None)

    def run(step: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, str(script), url, step],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
            check=False,
        )

    started = run("start")
    assert started.returncode == 0, started.stderr
    resumed = run("resume")
    assert resumed.returncode == 0, resumed.stderr
    assert "RESUMED Ritz yes" in resumed.stdout

    marker = tmp_path / "MARKER"
    with SQLAlchemySaver.from_conn_string(url, strict=False) as saver:
        latest = saver.get_tuple(cfg("t"))
        assert latest is not None
        with raw(saver) as conn:
            conn.execute(update(writes).values(blob=evil(marker)))
            inline = ormsgpack.packb([1, [["answer", "msgpack", evil(marker)]]])
            conn.execute(update(checkpoints).values(inline_values=inline))
    probe = tmp_path / "probe.py"
    probe.write_text(
        textwrap.dedent(
            f"""
            import sys
            from langgraph.checkpoint.sqlalchemy import SQLAlchemySaver, CheckpointDecodeError
            saver = SQLAlchemySaver.from_conn_string({url!r})
            try:
                got = saver.get_tuple({{"configurable": {{"thread_id": "t"}}}})
                print("AS DATA", got.checkpoint["channel_values"])
            except CheckpointDecodeError as e:
                print("REFUSED", e)
            """
        )
    )
    refused = subprocess.run(
        [sys.executable, str(probe)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    # The allowlist hands the forged os.system back as its argument (the command string),
    # as LangGraph's strict serializer returns it; nothing runs.
    assert "AS DATA" in refused.stdout, (refused.stdout, refused.stderr)
    assert f"touch {marker}" in refused.stdout or str(marker) in refused.stdout
    assert not marker.exists()


def test_copy_and_export_between_encryption_keys(tmp_path: Path) -> None:
    """Values move as data through the savers' own ciphers: decrypted with the source's
    key, encrypted with the target's (a copy re-keys); an export file stays encrypted with
    the exporting saver's key; a tool without the key cannot read the document."""
    from langgraph.checkpoint.serde.encrypted import EncryptedSerializer

    from .test_forged import MARKER as SECRET
    from .test_forged import all_bytes

    key_a, key_b = b"a" * 32, b"b" * 32

    def saver(name: str, key: bytes) -> SQLAlchemySaver:
        serde = EncryptedSerializer.from_pycryptodome_aes(key=key)
        s = SQLAlchemySaver.from_conn_string(f"sqlite:///{tmp_path / name}", serde=serde)
        s.setup()
        return s

    source, target, imported = (
        saver("a.sqlite", key_a),
        saver("b.sqlite", key_b),
        saver("c.sqlite", key_a),
    )
    try:
        cp, versions = make_checkpoint({"small": SECRET, "big": SECRET * 1000})
        config = source.put(cfg("enc"), cp, {}, versions)
        source.put_writes(config, [("out", {"k": SECRET})], "task")
        transfer.copy_threads(source, target)
        want = source.get_tuple(config)
        got = target.get_tuple(config)
        assert want is not None and got is not None
        assert got.checkpoint["channel_values"] == want.checkpoint["channel_values"]
        assert got.pending_writes == want.pending_writes
        for table, column, value in all_bytes(target):
            if isinstance(value, (bytes, bytearray, memoryview)):
                assert SECRET.encode() not in bytes(value), f"{table}.{column} in clear"
        dump = tmp_path / "enc.jsonl"
        with dump.open("w") as fp:
            transfer.export_threads(source, None, fp)
        assert SECRET not in dump.read_text()
        with dump.open() as fp:
            transfer.import_threads(imported, fp)
        back = imported.get_tuple(config)
        assert (
            back is not None
            and back.checkpoint["channel_values"] == want.checkpoint["channel_values"]
        )
    finally:
        for s in (source, target, imported):
            s.close()
    # The command line has no key: it reports the checkpoint as undecodable, shows nothing.
    done = cli("--url", str(tmp_path / "a.sqlite"), "threads", "show", "enc")
    assert SECRET not in done.stdout + done.stderr


# -- from the hostile review ----------------------------------------------------------------


class _Wrapper:
    """A serializer wrapping another (say, compressing): strict mode cannot see inside."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        return self.inner.dumps_typed(obj)  # type: ignore[no-any-return]

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        return self.inner.loads_typed(data)


def test_strict_refuses_serializers_it_cannot_check(tmp_path: Path) -> None:
    from langgraph.checkpoint.serde.encrypted import EncryptedSerializer
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

    strict = JsonPlusSerializer(allowed_msgpack_modules=None)
    refused = {
        "pickle_fallback": JsonPlusSerializer(pickle_fallback=True, allowed_msgpack_modules=None),
        "permissive": JsonPlusSerializer(allowed_msgpack_modules=True),
        "wrapped twice": EncryptedSerializer.from_pycryptodome_aes(
            EncryptedSerializer.from_pycryptodome_aes(strict, key=b"k" * 16), key=b"k" * 16
        ),
        "unknown wrapper": _Wrapper(strict),
    }
    for name, serde in refused.items():
        with pytest.raises(ValueError, match="strict=True"):
            SQLAlchemySaver.from_conn_string(str(tmp_path / "x.db"), strict=True, serde=serde)
            pytest.fail(name)


@pytest.mark.parametrize("type_", ["pickle", "json"])
def test_strict_decoding_refuses_pickle_and_json_values(tmp_path: Path, type_: str) -> None:
    """A row typed ``pickle`` (unpickled by a serializer with pickle_fallback) or
    ``json`` (LangChain's constructor format, which imports what it names) is refused
    by strict decoding, and prune never hands a non-msgpack document to the serializer."""
    import pickle

    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

    marker = tmp_path / "MARKER"

    class Evil:
        def __reduce__(self) -> Any:
            import os

            return (os.system, (f"touch {marker}",))

    data = (
        pickle.dumps(Evil())
        if type_ == "pickle"
        else json.dumps(
            {"lc": 1, "type": "constructor", "id": ["os", "system"], "kwargs": {}}
        ).encode()
    )
    url = f"sqlite:///{tmp_path / 'p.sqlite'}"
    with SQLAlchemySaver.from_conn_string(url, strict=False) as saver:
        saver.setup()
        door = Door(saver, "sync")
        import asyncio

        config = asyncio.run(plant(door, "write", marker))
        with raw(saver) as conn:
            conn.execute(update(writes).values(type=type_, blob=data))
            conn.execute(update(checkpoints).values(type=type_, checkpoint=data))
    with SQLAlchemySaver.from_conn_string(url, strict=True) as saver:
        # Strict mode alone: LangGraph's strict serializer decides (no pickle fallback; a
        # LangChain constructor revives core types only); nothing runs.
        with contextlib.suppress(CheckpointDecodeError):
            saver.get_tuple(config)
        assert not marker.exists()
    with (
        SQLAlchemySaver.from_conn_string(url, strict=True, strict_decode=True) as saver,
        pytest.raises(CheckpointDecodeError, match="msgpack values only"),
    ):
        saver.get_tuple(config)
    # a permissive saver with pickle_fallback: prune reads the forged document as data only
    serde = JsonPlusSerializer(pickle_fallback=True)
    with SQLAlchemySaver.from_conn_string(url, strict=False, serde=serde) as saver:
        saver.prune([THREAD])
    assert not marker.exists()


NON_CANONICAL = {
    "uint8 1": ("msgpack", b"\xcc\x01"),
    "float32": ("msgpack", b"\xca?\xc0\x00\x00"),
    "str8": ("msgpack", b"\xd9\x01a"),
    "duplicate keys": ("msgpack", b"\x82\xa1a\x01\xa1a\x02"),
    "trailing bytes": ("msgpack", b"\x01\x02"),
    "bin": ("msgpack", b"\xc4\x03abc"),
    "nil": ("msgpack", b"\xc0"),
    "null with data": ("null", b"xyz"),
    "array16": ("msgpack", b"\xdc\x00\x01\x01"),
    "negative ext code": ("msgpack", b"\xd6\xff\x00\x00\x00\x01"),
    "pickle": ("pickle", b"\x80\x04N."),
}


def test_values_move_byte_for_byte_even_when_not_canonical(tmp_path: Path) -> None:
    """Values are moved as stored, not re-encoded: msgpack in a form ormsgpack would not
    write, other type tags and extension codes survive copy and export+import."""
    url, _ = forged_database(tmp_path, tmp_path / "MARKER", ["write"])
    with SQLAlchemySaver.from_conn_string(url, strict=False) as saver, raw(saver) as conn:
        (checkpoint_id,) = conn.execute(
            select(checkpoints.c.checkpoint_id).where(checkpoints.c.thread_id == "t-write")
        ).first()
        for i, (t, b) in enumerate(NON_CANONICAL.values()):
            conn.execute(
                writes.insert().values(
                    thread_id="t-write",
                    checkpoint_ns="",
                    checkpoint_id=checkpoint_id,
                    task_id=f"odd{i:02d}",
                    task_path="",
                    idx=0,
                    channel="c",
                    type=t,
                    blob=b,
                )
            )
    dump = tmp_path / "dump.jsonl"
    assert cli("--url", url, "export", "t-write", "-o", str(dump)).returncode == 0
    for how, argv in (
        ("copy", ("copy", "--from", url, "--to", f"sqlite:///{tmp_path / 'c.sqlite'}")),
        ("import", ("--url", f"sqlite:///{tmp_path / 'i.sqlite'}", "import", str(dump))),
    ):
        done = cli(*argv)
        assert done.returncode == 0, (how, done.stderr)
        target = argv[4] if how == "copy" else argv[1]
        with SQLAlchemySaver.from_conn_string(target) as saver:
            assert stored_values(saver) >= {v for v in stored_values_of(url) if v[0] == "write"}, (
                how
            )


def stored_values_of(url: str) -> set[tuple[Any, ...]]:
    with SQLAlchemySaver.from_conn_string(url) as saver:
        return stored_values(saver)


def test_crafted_import_lines_are_typed_errors(tmp_path: Path) -> None:
    import base64

    from langgraph.checkpoint.base import empty_checkpoint

    cp = empty_checkpoint()
    good = {"type": "msgpack", "data": base64.b64encode(ormsgpack.packb(cp)).decode()}
    listy = {**cp, "channel_versions": [1, 2]}
    bad_doc = {"type": "msgpack", "data": base64.b64encode(ormsgpack.packb(listy)).decode()}
    base = {"thread_id": "t", "checkpoint_ns": "", "checkpoint_id": cp["id"], "metadata": {}}
    write = {"task_id": "t", "channel": "c", "value": good}
    cases = {
        "idx beyond 64 bits": {
            **base,
            "checkpoint": good,
            "pending_writes": [{**write, "idx": 2**63}],
        },
        "channel_versions a list": {**base, "checkpoint": bad_doc},
        "channel_values a list": {**base, "checkpoint": good, "channel_values": [1]},
    }
    for name, record in cases.items():
        text = json.dumps({**CRAFTED_V1, "version": 2}) + "\n" + json.dumps(record) + "\n"
        db = str(tmp_path / f"{len(name)}.sqlite")
        done = cli("--url", db, "import", "-", "--allow-incomplete", stdin=text)
        assert done.returncode == 2, (name, done.stderr)
        assert "Traceback" not in done.stderr and "line 2" in done.stderr, (name, done.stderr)


def test_terminal_controls_in_rows_are_shown_escaped(tmp_path: Path) -> None:
    """A thread id or metadata value holding ESC sequences, C1 or bidi controls is
    printed escaped: a forged row cannot recolour, hide or reorder the operator's output."""
    url = f"sqlite:///{tmp_path / 't.sqlite'}"
    hostile = "t\x1b]0;owned\x07\x1b[2J\u202eevil\x9b"
    with SQLAlchemySaver.from_conn_string(url) as saver:
        saver.setup()
        cp, versions = make_checkpoint({"v": 1})
        saver.put(cfg(hostile), cp, {"source": "x\x1b[31mred\u2066"}, versions)
    for argv in (("threads", "list"), ("stats",), ("threads", "show", hostile)):
        for extra in ((), ("--json",)):
            done = cli("--url", url, *argv, *extra)
            assert done.returncode == 0, (argv, done.stderr)
            out = done.stdout
            assert not any(c in out for c in "\x1b\x07\x9b\u202e\u2066"), (argv, extra, out)
