"""``list_threads`` through the checkpoint-id index, cursor paging, and estimated totals.

Listing the newest threads was a ``GROUP BY thread_id`` over the whole table.
It now walks ``ix_lgsa_checkpoints_checkpoint_id`` backwards until it has the page's
threads. These tests load a few hundred threads with interleaved activity, several
namespaces, threads that tie on their newest id (copies) and a long (digest-keyed)
thread id behind the saver's back, and check every page, offset, cursor and ``idle_for``
listing against the full listing and against what the rows say.
"""

from __future__ import annotations

import random
import uuid
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from sqlalchemy import insert

from langgraph.checkpoint.sqlalchemy import SQLAlchemySaver, ThreadInfo
from langgraph.checkpoint.sqlalchemy._codec.threadinfo import id_at
from langgraph.checkpoint.sqlalchemy.schema import checkpoints, stored_full

from ..doors import Door
from ..security.test_forged import raw

THREADS, ROWS = 240, 1500
LONG = "L" * 300  # stored under a digest key
NOW = datetime.now(timezone.utc)


def time_id(moment: datetime, n: int) -> str:
    """A UUIDv6 checkpoint id of ``moment`` (``n`` makes it unique)."""
    base = uuid.UUID(id_at(moment)).int
    return str(uuid.UUID(int=base | (2 << 62) | n))


def load(door: Door) -> dict[str, dict[str, Any]]:
    """ROWS checkpoints over THREADS threads, 5 minutes apart over the last 5 days, each
    on a random thread and namespace; ``copy-a``/``copy-b`` and LONG hold the same ids
    as ``t0005`` (ties). Returns what the rows say of each thread."""
    rnd = random.Random(16)
    rows = []
    for k in range(ROWS):
        thread = f"t{min(int(rnd.expovariate(1 / 60)), THREADS - 1):04}"  # skewed activity
        moment = NOW - timedelta(days=5) + timedelta(minutes=5 * k)
        ns = rnd.choice(["", "", "sub:1", "sub:2"])
        rows.append((thread, ns, time_id(moment, k), rnd.randrange(1, 60)))
    rows += [
        (t, ns, i, n) for t in ("copy-b", "copy-a", LONG) for (s, ns, i, n) in rows if s == "t0005"
    ]
    expected: dict[str, dict[str, Any]] = {}
    for thread, ns, checkpoint_id, size in rows:
        e = expected.setdefault(thread, {"n": 0, "ns": set(), "last": "", "bytes": 0})
        e["n"] += 1
        e["ns"].add(ns)
        e["last"] = max(e["last"], checkpoint_id)
        e["bytes"] += size
    values = [
        {
            "thread_id": thread,
            "thread_id_full": stored_full(thread),
            "checkpoint_ns": ns,
            "checkpoint_id": checkpoint_id,
            "parent_checkpoint_id": None,
            "type": "msgpack",
            "checkpoint": b"\x80" * size,
            "metadata": {},
            "value_versions": {},
        }
        for thread, ns, checkpoint_id, size in rows
    ]
    with raw(door.saver) as conn:
        for start in range(0, len(values), 500):
            conn.execute(insert(checkpoints), values[start : start + 500])
    return expected


def order(expected: dict[str, dict[str, Any]], below: str | None = None) -> list[str]:
    """Thread ids newest activity first, ties by thread key (the long id's digest key
    sorts first: ``lgsa:...`` is below ``t...`` but above ``copy-...``)."""
    from langgraph.checkpoint.sqlalchemy.schema import name_key

    kept = [t for t, e in expected.items() if below is None or e["last"] < below]
    by_key = sorted(kept, key=lambda t: name_key(t))
    return sorted(by_key, key=lambda t: expected[t]["last"], reverse=True)


def summary(infos: list[ThreadInfo]) -> list[tuple[Any, ...]]:
    return [
        (t.thread_id, t.checkpoints, t.namespaces, t.last_checkpoint_id, t.bytes) for t in infos
    ]


async def pages(door: Door, limit: int, **kwargs: Any) -> list[ThreadInfo]:
    """Every page of ``limit`` threads by the cursor, concatenated."""
    out: list[ThreadInfo] = []
    after: Any = None
    while True:
        page = await door.list_threads(limit=limit, after=after, **kwargs)
        assert len(page) <= limit
        if not page:
            return out
        out += page
        after = page[-1]


async def test_pages_by_index_equal_the_full_listing(door: Door) -> None:
    expected = load(door)
    full = await door.list_threads(limit=None)
    assert summary(full) == [
        (t, e["n"], len(e["ns"]), e["last"], e["bytes"])
        for t in order(expected)
        for e in [expected[t]]
    ]
    ties = [t.thread_id for t in full if t.last_checkpoint_id == expected["t0005"]["last"]]
    assert ties == ["copy-a", "copy-b", LONG, "t0005"]
    assert full[0].last_activity is not None
    for limit in (1, 7, 20, 250):
        assert await door.list_threads(limit=limit) == full[:limit]
    for offset in (3, 50, 239, 500):
        assert await door.list_threads(limit=20, offset=offset) == full[offset : offset + 20]
    for limit in (7, 60):
        assert await pages(door, limit) == full
    # the cursor as a pair or as a thread id, across the tie
    i = full.index(next(t for t in full if t.thread_id == "copy-b"))
    pair = (full[i].last_checkpoint_id, "copy-b")
    assert await door.list_threads(limit=5, after=pair) == full[i + 1 : i + 6]
    assert await door.list_threads(limit=5, after="copy-b") == full[i + 1 : i + 6]
    assert await door.list_threads(limit=None, after=full[i]) == full[i + 1 :]
    assert await door.list_threads(limit=5, after=full[-1]) == []


async def test_idle_threads_by_index(door: Door) -> None:
    expected = load(door)
    full = await door.list_threads(limit=None)
    for days in (1, 3, 4.9, 6):
        idle_for = timedelta(days=days)
        cutoff = id_at(datetime.now(timezone.utc) - idle_for)
        idle = await door.list_threads(limit=None, idle_for=idle_for)
        assert [t.thread_id for t in idle] == order(expected, below=cutoff)
        assert idle == [t for t in full if t.last_checkpoint_id < cutoff]
        assert await door.list_threads(limit=10, idle_for=idle_for) == idle[:10]
        assert await door.list_threads(limit=10, offset=5, idle_for=idle_for) == idle[5:15]
        assert await pages(door, 9, idle_for=idle_for) == idle


async def test_cursor_arguments_are_checked(door: Door) -> None:
    load(door)
    with pytest.raises(TypeError):
        await door.list_threads(limit=5, after=5)
    with pytest.raises(TypeError):
        await door.list_threads(limit=5, after=("a", "b", "c"))
    with pytest.raises(ValueError):
        await door.list_threads(limit=5, after="no-such-thread")


async def test_estimated_totals(door: Door) -> None:
    load(door)
    exact = await door.storage_stats()
    fast = await door.storage_stats(estimate=True)
    assert (
        set(fast)
        == set(exact)
        == {
            "lgsa_checkpoints",
            "lgsa_checkpoint_blobs",
            "lgsa_checkpoint_writes",
        }
    )
    for table, numbers in fast.items():
        assert set(numbers) == {"rows", "bytes"}
        assert all(type(v) is int and v >= 0 for v in numbers.values()), (table, numbers)
    if door.saver.engine.dialect.name == "sqlite":  # largest rowid, nothing deleted
        assert fast["lgsa_checkpoints"]["rows"] == exact["lgsa_checkpoints"]["rows"]
    # a thread's totals stay exact
    assert await door.storage_stats("t0005", estimate=True) == await door.storage_stats("t0005")


def test_cli_pages_by_cursor_and_fast_stats(
    tmp_path: Any, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import json

    from langgraph.checkpoint.sqlalchemy import SQLAlchemySaver, cli

    url = f"sqlite:///{tmp_path / 'cli.sqlite'}"
    with SQLAlchemySaver.from_conn_string(url) as saver:
        saver.setup()
        load(Door(saver, "sync"))
        full = [t.thread_id for t in saver.list_threads(limit=None)]
    monkeypatch.setenv("LANGGRAPH_CHECKPOINT_URL", url)
    seen: list[str] = []
    after: list[str] = []
    while True:
        assert cli.main(["threads", "list", "--limit", "100", *after]) == 0
        lines = capsys.readouterr().out.splitlines()
        seen += [line.split()[0] for line in lines[1:] if not line.startswith("next page:")]
        if not lines[-1].startswith("next page: --after "):
            break
        after = ["--after", lines[-1].removeprefix("next page: --after ").strip("'")]
    assert seen == full
    assert cli.main(["stats", "--fast", "--json"]) == 0
    fast = json.loads(capsys.readouterr().out)
    assert cli.main(["stats", "--json"]) == 0
    exact = json.loads(capsys.readouterr().out)
    assert fast["tables"]["lgsa_checkpoints"]["rows"] == exact["tables"]["lgsa_checkpoints"]["rows"]
    assert [t["thread_id"] for t in fast["threads"]] == full[:10]


def test_an_unknown_cursor_is_a_typed_one_line_error(tmp_path: Any) -> None:
    from langgraph.checkpoint.sqlalchemy import CheckpointConfigError, cli

    url = f"sqlite:///{tmp_path / 'c.sqlite'}"
    with SQLAlchemySaver.from_conn_string(url) as saver:
        saver.setup()
        for bad in ("nope", ""):
            with pytest.raises(CheckpointConfigError, match="after"):
                saver.list_threads(limit=2, after=bad)
    for bad in ("nope", ""):
        assert cli.main(["threads", "list", "--after", bad, "--url", url]) == 2
