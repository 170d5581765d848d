"""Forged and damaged rows, written with raw SQL behind the saver's back, on every backend.

* A damaged checkpoint, ``inline_values`` column, blob or write: ``get_tuple`` raises
  ``CheckpointDecodeError`` naming the thread, the checkpoint and the part; ``list()``
  logs it and still yields every other checkpoint of the thread.
* A value forged as a msgpack extension that names a callable with a side effect
  (``os.mkdir``): a strict ``JsonPlusSerializer`` (``LANGGRAPH_STRICT_MSGPACK`` or an
  explicit ``allowed_msgpack_modules``) does not call it. What it does instead, measured
  here: it returns the extension's argument as a plain value (the string), no error.
* ``EncryptedSerializer``: no channel value or write is readable in any byte column of
  the three tables, and a saver with another key gets ``CheckpointDecodeError``.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import ormsgpack
import pytest
from langgraph.checkpoint.serde import _msgpack as lg_msgpack
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer
from langgraph.checkpoint.serde.jsonplus import EXT_CONSTRUCTOR_SINGLE_ARG, JsonPlusSerializer
from sqlalchemy import Connection, select, update

from langgraph.checkpoint.sqlalchemy import CheckpointDecodeError, SQLAlchemySaver
from langgraph.checkpoint.sqlalchemy.schema import blobs, checkpoints, writes

from ..doors import Door
from .test_hostile import cfg, ids, make_checkpoint

THREAD = "forged 'thread' 🧵"
#: Never valid msgpack: 0xc1 is the one byte msgpack never uses.
GARBAGE = b"\xc1" + os.urandom(31)
BIG = 17 * 1024  # over the 16 KiB inline limit: the value goes to the blobs table


@contextlib.contextmanager
def raw(saver: SQLAlchemySaver) -> Iterator[Connection]:
    """A write transaction on the saver's tables, behind its back."""
    engine = saver.engine
    if saver.schema:
        engine = engine.execution_options(schema_translate_map={None: saver.schema})
    with engine.begin() as conn:
        yield conn


def checkpoint_row(thread_id: str, checkpoint_id: str) -> Any:
    return (checkpoints.c.thread_id == thread_id) & (checkpoints.c.checkpoint_id == checkpoint_id)


async def history(door: Door) -> tuple[list[str], dict[str, str]]:
    """Three checkpoints of THREAD, each with a small (inline) value, a large (blob)
    value of a new version and a write; returns ids (oldest first) and the big
    channel's version of each."""
    made: list[str] = []
    versions: dict[str, str] = {}
    parent = None
    for n in range(3):
        cp, v = make_checkpoint({"small": f"small {n}", "big": f"{n}" * BIG})
        config = await door.put(parent or cfg(THREAD), cp, {"n": n}, v)
        await door.put_writes(config, [("out", f"write {n}")], "task")
        made.append(cp["id"])
        versions[cp["id"]] = v["big"]
        parent = config
    return made, versions


DAMAGES = {
    # part damaged: (expected CheckpointDecodeError.part, how)
    "checkpoint": "checkpoint",
    "checkpoint-not-a-dict": "checkpoint",
    "inline_values-not-msgpack": "inline_values",
    "inline_values-bad-entry": "inline_values",
    "inline-value": "channel small",
    "blob": "channel big",
    "write": "write task/out",
}


def damage(conn: Connection, how: str, checkpoint_id: str, big_version: str) -> None:
    row = checkpoint_row(THREAD, checkpoint_id)
    if how == "checkpoint":
        conn.execute(update(checkpoints).where(row).values(checkpoint=GARBAGE))
    elif how == "checkpoint-not-a-dict":
        conn.execute(update(checkpoints).where(row).values(checkpoint=ormsgpack.packb([1, 2])))
    elif how == "inline_values-not-msgpack":
        conn.execute(update(checkpoints).where(row).values(inline_values=GARBAGE))
    elif how == "inline_values-bad-entry":
        bad = ormsgpack.packb([1, [["small", "msgpack"]]])  # an entry without its bytes
        conn.execute(update(checkpoints).where(row).values(inline_values=bad))
    elif how == "inline-value":
        bad = ormsgpack.packb([1, [["small", "msgpack", GARBAGE]]])
        conn.execute(update(checkpoints).where(row).values(inline_values=bad))
    elif how == "blob":
        conn.execute(
            update(blobs)
            .where(
                (blobs.c.thread_id == THREAD)
                & (blobs.c.channel == "big")
                & (blobs.c.version == big_version)
            )
            .values(blob=GARBAGE)
        )
    elif how == "write":
        conn.execute(
            update(writes)
            .where((writes.c.thread_id == THREAD) & (writes.c.checkpoint_id == checkpoint_id))
            .values(blob=GARBAGE)
        )
    else:
        raise AssertionError(how)


@pytest.mark.parametrize("how", list(DAMAGES))
async def test_damaged_row_raises_decode_error_and_list_skips_it(
    door: Door, how: str, caplog: pytest.LogCaptureFixture
) -> None:
    made, versions = await history(door)
    first, damaged, last = made
    with raw(door.saver) as conn:
        damage(conn, how, damaged, versions[damaged])

    with pytest.raises(CheckpointDecodeError) as info:
        await door.get_tuple(cfg(THREAD, damaged))
    e = info.value
    assert (e.thread_id, e.checkpoint_ns, e.checkpoint_id, e.part) == (
        THREAD,
        "",
        damaged,
        DAMAGES[how],
    )
    for named in (repr(THREAD), repr(damaged), DAMAGES[how]):
        assert named in str(e)

    # The neighbours are intact.
    for other in (first, last):
        got = await door.get_tuple(cfg(THREAD, other))
        assert got is not None and got.checkpoint["id"] == other
    latest = await door.get_tuple(cfg(THREAD))
    assert latest is not None and latest.checkpoint["id"] == last

    caplog.clear()
    with caplog.at_level(logging.ERROR, logger="langgraph.checkpoint.sqlalchemy"):
        listed = await door.list(cfg(THREAD))
        everything = await door.list(None)
    assert ids(listed) == [last, first]
    assert ids(everything) == [last, first]
    assert [t.metadata["n"] for t in listed] == [2, 0]
    assert listed[1].checkpoint["channel_values"] == {"small": "small 0", "big": "0" * BIG}
    assert listed[0].pending_writes == [("task", "out", "write 2")]
    skipped = [
        r
        for r in caplog.records
        if r.name == "langgraph.checkpoint.sqlalchemy" and r.levelno == logging.ERROR
    ]
    assert len(skipped) == 2, [r.getMessage() for r in caplog.records]  # once a list()
    for record in skipped:
        assert damaged in record.getMessage() and DAMAGES[how] in record.getMessage()


# -- forged msgpack extensions -----------------------------------------------------------


def forged_mkdir(target: Path) -> bytes:
    """msgpack of jsonplus's "construct with one argument" extension naming
    ``os.mkdir(target)``, as ``_msgpack_default`` encodes a pydantic SecretStr."""
    payload = ormsgpack.packb(("os", "mkdir", str(target)))
    return ormsgpack.packb(ormsgpack.Ext(EXT_CONSTRUCTOR_SINGLE_ARG, payload))


def strict_serde(kind: str, monkeypatch: pytest.MonkeyPatch) -> JsonPlusSerializer:
    if kind == "env":
        # LANGGRAPH_STRICT_MSGPACK is read once, when langgraph.checkpoint.serde._msgpack
        # is imported, and looked up when a JsonPlusSerializer is built: setting it later
        # affects only serializers built after the module flag is set too. (A saver built
        # without serde= uses BaseCheckpointSaver's class-level serializer, built at
        # import: the variable must be set before the process imports langgraph.)
        monkeypatch.setenv("LANGGRAPH_STRICT_MSGPACK", "1")
        monkeypatch.setattr(lg_msgpack, "STRICT_MSGPACK_ENABLED", True)
        return JsonPlusSerializer()
    return JsonPlusSerializer(allowed_msgpack_modules=[("collections", "OrderedDict")])


async def forge(door: Door, where: str, target: Path) -> Any:
    """Store a checkpoint with a channel value and a write, then replace ``where`` (a
    write value, the inline channel value or the blob) by the forged extension."""
    cp, versions = make_checkpoint({"v": "harmless"})
    config = await door.put(cfg(THREAD), cp, {}, versions)
    await door.put_writes(config, [("out", "harmless")], "task")
    forged = forged_mkdir(target)
    row = checkpoint_row(THREAD, cp["id"])
    with raw(door.saver) as conn:
        if where == "write":
            conn.execute(update(writes).where(writes.c.thread_id == THREAD).values(blob=forged))
        elif where == "inline":
            packed = conn.execute(select(checkpoints.c.inline_values).where(row)).scalar_one()
            assert packed is not None, "the value was not stored inline"
            inline = ormsgpack.packb([1, [["v", "msgpack", forged]]])
            conn.execute(update(checkpoints).where(row).values(inline_values=inline))
        else:
            n = conn.execute(
                update(blobs).where(blobs.c.thread_id == THREAD).values(blob=forged)
            ).rowcount
            assert n == 1, "the value was not stored in the blobs table"
    return config


WHERE = ["write", "inline", "blob"]


async def read_forged(door: Door, where: str, config: Any) -> Any:
    got = await door.get_tuple(config)
    assert got is not None
    listed = await door.list(cfg(THREAD))
    assert len(listed) == 1
    if where == "write":
        assert listed[0].pending_writes == got.pending_writes
        ((_, _, value),) = got.pending_writes
        return value
    assert listed[0].checkpoint["channel_values"] == got.checkpoint["channel_values"]
    return got.checkpoint["channel_values"]["v"]


@pytest.mark.parametrize("where", WHERE)
@pytest.mark.parametrize("strict", ["env", "allowlist"])
async def test_forged_callable_is_not_run_by_a_strict_serializer(
    saver_factory: Any,
    mode: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    strict: str,
    where: str,
) -> None:
    """The strict serializer does not import-and-call ``os.mkdir``: by LangGraph's
    allowlist (LANGGRAPH_STRICT_MSGPACK or an explicit one) it returns the extension's
    argument (the path string) in place of the object, and the saver hands back just
    that; with ``strict_decode=True`` the saver raises CheckpointDecodeError naming the
    part instead."""
    serde = strict_serde(strict, monkeypatch)
    saver = saver_factory(serde=serde, inline_limit=0 if where == "blob" else 16 * 1024)
    assert saver.strict_decode is False
    door = Door(saver, mode)
    target = tmp_path / f"pwned-{strict}-{where}"
    config = await forge(door, where, target)
    value = await read_forged(door, where, config)
    assert value == str(target)  # not reconstructed: the raw argument
    door.saver.strict_decode = True
    with pytest.raises(CheckpointDecodeError, match=r"os\.mkdir was not rebuilt"):
        await read_forged(door, where, config)
    assert not target.exists(), "the forged callable ran"


@pytest.mark.parametrize("where", WHERE)
async def test_control_forged_callable_runs_under_a_permissive_serializer(
    saver_factory: Any, mode: str, tmp_path: Path, where: str
) -> None:
    """Control for the test above: the forgery is real. A permissive serializer
    (``allowed_msgpack_modules=True``, LangGraph's default without
    LANGGRAPH_STRICT_MSGPACK) calls ``os.mkdir`` on read."""
    serde = JsonPlusSerializer(allowed_msgpack_modules=True)
    saver = saver_factory(serde=serde, inline_limit=0 if where == "blob" else 16 * 1024)
    door = Door(saver, mode)
    target = tmp_path / f"pwned-{where}"
    config = await forge(door, where, target)
    await door.get_tuple(config)
    assert target.is_dir()


# -- EncryptedSerializer -----------------------------------------------------------------

MARKER = "ZQX-secret-marker-7f3a"


def all_bytes(saver: SQLAlchemySaver) -> list[tuple[str, str, Any]]:
    """``(table, column, value)`` of every column of every row of the three tables."""
    out = []
    with raw(saver) as conn:
        for table in (checkpoints, blobs, writes):
            for row in conn.execute(select(table)).mappings():
                out.extend((table.name, column, value) for column, value in row.items())
    return out


@pytest.mark.parametrize("key_size", [16, 24, 32])
async def test_encrypted_serializer_leaves_no_value_in_clear(
    saver_factory: Any, mode: str, key_size: int
) -> None:
    key = bytes(range(key_size))
    saver = saver_factory(serde=EncryptedSerializer.from_pycryptodome_aes(key=key))
    door = Door(saver, mode)
    values = {"small": f"small {MARKER}", "big": MARKER * (BIG // len(MARKER) + 1)}
    cp, versions = make_checkpoint(values)
    config = await door.put(cfg(THREAD), cp, {"note": "metadata is clear by design"}, versions)
    await door.put_writes(config, [("out", f"write {MARKER}"), ("out2", {"k": MARKER})], "task")

    got = await door.get_tuple(config)
    assert got is not None
    assert got.checkpoint["channel_values"] == values
    assert got.pending_writes == [
        ("task", "out", f"write {MARKER}"),
        ("task", "out2", {"k": MARKER}),
    ]
    cells = all_bytes(saver)
    tables = {t for t, _, _ in cells}
    assert tables == {"lgsa_checkpoints", "lgsa_checkpoint_blobs", "lgsa_checkpoint_writes"}
    inline = [v for t, c, v in cells if c == "inline_values" and v is not None]
    assert inline, "the small value was not stored inline"
    assert [v for t, c, v in cells if t == "lgsa_checkpoint_blobs" and c == "blob"], "no blob"
    for table, column, value in cells:
        if isinstance(value, (bytes, bytearray, memoryview)):
            assert MARKER.encode() not in bytes(value), f"{table}.{column} holds it in clear"
        else:
            assert MARKER not in repr(value), f"{table}.{column} holds it in clear"

    # Another key: CheckpointDecodeError, and list() skips the checkpoint.
    other = saver_factory(
        shared=True, serde=EncryptedSerializer.from_pycryptodome_aes(key=b"x" * key_size)
    )
    other_door = Door(other, mode)
    with pytest.raises(CheckpointDecodeError) as info:
        await other_door.get_tuple(config)
    assert info.value.checkpoint_id == cp["id"] and info.value.thread_id == THREAD
    assert info.value.part == "checkpoint"
    assert await other_door.list(cfg(THREAD)) == []
