"""Bad or oversized requests to ``SQLAlchemyStore`` on every backend, sync and async: each
cap answers at once with a typed error that names the limit and writes nothing, and a
request of any size under the caps works (large ``get`` batches run in chunks).

The caps: ``list_namespaces`` conditions no longer than a stored namespace and at most
``MAX_CONDITIONS`` of them, search filters of at most ``MAX_FILTER_KEYS`` keys,
``MAX_DEPTH`` levels and ``MAX_FILTER_BYTES`` of JSON, item values of at most
``MAX_VALUE_BYTES`` of JSON (on MariaDB, half of the server's ``max_allowed_packet``).
"""

from __future__ import annotations

import logging
from typing import Any

import pytest
from langgraph.store.base import (
    GetOp,
    InvalidNamespaceError,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchOp,
)
from sqlalchemy import event

from langgraph.checkpoint.sqlalchemy import StoreRequestError
from langgraph.store.sqlalchemy import _reads, _sizes, namespaces
from langgraph.store.sqlalchemy.filters import MAX_FILTER_BYTES, MAX_FILTER_KEYS
from langgraph.store.sqlalchemy.tables import NAMESPACE_MAX_LENGTH

from ..conftest import StoreDoor


async def _refused(door: StoreDoor, error: type[Exception], match: str, call: Any) -> None:
    """``call(door)`` raises ``error`` (message matching ``match``) at once: before it
    sends any statement to the database (either engine's ``before_cursor_execute``)."""
    sent: list[str] = []

    def before(conn: Any, cursor: Any, statement: str, *rest: Any) -> None:
        sent.append(statement)

    engines = [door.store.engine, door.store.async_engine.sync_engine]
    for engine in engines:
        event.listen(engine, "before_cursor_execute", before)
    try:
        with pytest.raises(error, match=match):
            await call(door)
    finally:
        for engine in engines:
            event.remove(engine, "before_cursor_execute", before)
    assert sent == []


async def _unchanged(door: StoreDoor) -> None:
    assert [(i.namespace, i.key) for i in await door.search((), limit=10)] == [(("a", "b"), "k")]
    assert (await door.get(("a", "b"), "k")).value == {"v": 1}


# -- list_namespaces -------------------------------------------------------------------


async def test_namespace_conditions_longer_than_a_namespace(store_door: StoreDoor) -> None:
    """A condition no stored namespace can match (its labels are longer joined than
    ``NAMESPACE_MAX_LENGTH``) is InvalidNamespaceError at once, as a too long search
    prefix is, never a driver's error nor a regular expression of megabytes (31 s and
    1.1 GB on SQLite for a 10 MB label)."""
    door = store_door
    await door.put(("a", "b"), "k", {"v": 1})
    huge = "x" * 5_000_000
    for kwargs in (
        {"prefix": (huge,)},
        {"suffix": (huge,)},
        {"prefix": ("*", huge)},
        {"suffix": (huge, "*")},
        {"prefix": ("a",), "suffix": ("b", huge)},
        {"prefix": ("n" * 150, "m" * 150)},  # 301 characters joined
        {"suffix": ("*",) * 151},  # 301 at least: one character a label
    ):
        await _refused(
            door,
            InvalidNamespaceError,
            f"at most {NAMESPACE_MAX_LENGTH}",
            lambda d, kw=kwargs: d.list_namespaces(**kw),
        )
    # the longest that can match still runs
    assert await door.list_namespaces(prefix=("n" * 150, "m" * 149)) == []
    assert await door.list_namespaces(suffix=("*",) * 150) == []
    assert await door.list_namespaces(prefix=("a", "*")) == [("a", "b")]
    await _unchanged(door)


async def test_namespace_condition_count(store_door: StoreDoor) -> None:
    """At most ``MAX_CONDITIONS`` match conditions in one ListNamespacesOp (2,000 made
    SQLite refuse the statement: "Expression tree is too large")."""
    door = store_door
    await door.put(("a", "b"), "k", {"v": 1})
    cap = namespaces.MAX_CONDITIONS
    many = tuple(MatchCondition("prefix", ("a", "*")) for _ in range(2000))
    await _refused(
        door,
        StoreRequestError,
        f"2,000 match conditions.*at most {cap}",
        lambda d: d.batch([PutOp(("c",), "k", {"v": 2}), ListNamespacesOp(many)]),
    )
    await _unchanged(door)  # the put beside it was not written
    at_cap = tuple(MatchCondition("suffix", ("*", "b")) for _ in range(cap - 1))
    at_cap += (MatchCondition("prefix", ("a",)),)
    assert await door.batch([ListNamespacesOp(at_cap)]) == [[("a", "b")]]


async def test_a_key_holding_nul_is_refused_on_every_backend(store_door: StoreDoor) -> None:
    """PostgreSQL's text columns refuse NUL (a raw DataError) where SQLite and MariaDB
    stored it: one answer everywhere, a ValueError before anything is written."""
    door = store_door
    await door.put(("a", "b"), "k", {"v": 1})
    for call in (
        lambda d: d.put(("a", "b"), "k\x00", {"v": 2}),
        lambda d: d.get(("a", "b"), "k\x00"),
        lambda d: d.batch([PutOp(("a", "b"), "k", {"v": 3}), PutOp(("a", "b"), "x\x00", {})]),
    ):
        await _refused(door, ValueError, "NUL", call)
    await _unchanged(door)


# -- search filters --------------------------------------------------------------------


async def test_filter_bounds(store_door: StoreDoor) -> None:
    """A filter's keys, depth and JSON size are capped; each refusal names its limit."""
    door = store_door
    await door.put(("a", "b"), "k", {"v": 1})
    too_many = {f"k{i}": i for i in range(MAX_FILTER_KEYS + 1)}
    await _refused(
        door,
        StoreRequestError,
        f"at most {MAX_FILTER_KEYS}",
        lambda d: d.search((), filter=too_many),
    )
    deep: Any = 1
    for _ in range(40):
        deep = {"d": deep}
    await _refused(door, ValueError, "levels", lambda d: d.search((), filter={"v": deep}))
    huge = {"v": "x" * (2 * MAX_FILTER_BYTES)}
    await _refused(
        door,
        StoreRequestError,
        f"at most {MAX_FILTER_BYTES:,}",
        lambda d: d.search((), filter=huge),
    )
    wide = {"v": ["x" * 1000] * (MAX_FILTER_BYTES // 500)}
    await _refused(
        door, StoreRequestError, "characters of JSON", lambda d: d.search((), filter=wide)
    )
    batch = [PutOp(("c",), "k", {"v": 2}), SearchOp((), filter=huge)]
    await _refused(door, StoreRequestError, "characters of JSON", lambda d: d.batch(batch))
    await _unchanged(door)
    # under the caps: a long equality is a plain (unmatched) search
    assert await door.search((), filter={"v": "x" * (MAX_FILTER_BYTES // 2)}) == []
    at_cap = {f"k{i}": None for i in range(MAX_FILTER_KEYS - 1)} | {"v": 1}
    assert [i.key for i in await door.search((), filter=at_cap)] == ["k"]


# -- batches of gets -----------------------------------------------------------------


async def test_batch_of_70000_gets(store_door: StoreDoor, caplog: pytest.LogCaptureFixture) -> None:
    """70,000 gets of one namespace (beyond psycopg's 65,535 parameters a statement,
    which read as a lost connection and was retried for 16 s) run in statements of
    ``GET_CHUNK`` keys, in one batch, each result in its place."""
    door = store_door
    n = 70_000
    present = {i: f"k{i}" for i in (0, 1, _reads.GET_CHUNK, n // 2, n - 1)}
    await door.batch([PutOp(("a", "b"), key, {"i": i}) for i, key in present.items()])
    await door.put(("other",), "k3", {"i": -1})
    ops = [GetOp(("a", "b"), f"k{i}") for i in range(n)] + [GetOp(("other",), "k3")]
    retries = "langgraph.store.sqlalchemy.retry"
    caplog.set_level(logging.WARNING, logger=retries)
    got = await door.batch(ops)
    assert [r.getMessage() for r in caplog.records if r.name == retries] == []  # none retried
    assert len(got) == n + 1
    assert {i: g.value["i"] for i, g in enumerate(got[:n]) if g is not None} == {
        i: i for i in present
    }
    assert got[n].value == {"i": -1}


# -- value sizes -------------------------------------------------------------------


async def test_value_over_the_cap(store_door: StoreDoor, backend: str) -> None:
    """A value larger than ``MAX_VALUE_BYTES`` of JSON (on MariaDB, than half of the
    server's ``max_allowed_packet``: a 20 MB value was retried for 16 s as a lost
    connection) is StoreRequestError naming its size and the cap, before anything of
    its batch is written."""
    door = store_door
    await door.put(("a", "b"), "k", {"v": 1})
    over = _sizes.MAX_VALUE_BYTES + 1
    value = {"v": "x" * over}
    await _refused(
        door,
        StoreRequestError,
        "bytes of JSON; the store takes at most",
        lambda d: d.put(("c",), "k", value),
    )
    batch = [PutOp(("a", "b"), "k", {"v": 3}), PutOp(("c",), "big", value)]
    await _refused(door, StoreRequestError, "Nothing was written", lambda d: d.batch(batch))
    await _unchanged(door)
    if backend == "mariadb":
        # 9 MB of JSON, 18 MB as the statement carries it (each quote escaped twice)
        quotes = {"v": '"' * 4_500_000}
        await _refused(
            door, StoreRequestError, "in a statement", lambda d: d.put(("c",), "k", quotes)
        )
        big = {"v": "x" * 20_000_000}
        await _refused(
            door, StoreRequestError, "max_allowed_packet", lambda d: d.put(("c",), "k", big)
        )
        await _unchanged(door)


async def test_large_values_in_one_batch(store_door: StoreDoor) -> None:
    """Values under the cap whose sum is larger than a statement may carry (MariaDB's
    default ``max_allowed_packet`` is 16 MiB) are written in several statements."""
    door = store_door
    size = 3_000_000
    values = {f"k{i}": {"v": str(i) * size} for i in range(6)}
    await door.batch([PutOp(("big",), key, value) for key, value in values.items()])
    got = await door.batch([GetOp(("big",), key) for key in values])
    assert [g.value for g in got] == list(values.values())
