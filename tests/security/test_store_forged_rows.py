"""A damaged or forged store row fails alone: ``get`` of it raises ``StoreDecodeError``,
``search`` of its namespace logs it and returns the other items, and the item can be
deleted. Rows are forged by writing the tables directly, as someone with write access
to the database could. JSON text of any shape reads as ``json.loads`` reads it, or as
undecodable; a namespace is remembered as checked only once it passed."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from langgraph.store.base import InvalidNamespaceError
from sqlalchemy import update

from langgraph.checkpoint.sqlalchemy import StoreDecodeError, StoreRequestError
from langgraph.checkpoint.sqlalchemy.schema import Undecodable, load_json
from langgraph.store.sqlalchemy import SQLAlchemyStore, _prepared, namespaces
from langgraph.store.sqlalchemy.tables import items

NS = ("forged",)

#: Column values a forger may write, each breaking one part of the row.
FORGERIES: dict[str, dict[str, Any]] = {
    "created_at beyond any date": {"created_at": 1e300},
    "updated_at beyond any date": {"updated_at": -1e300},
    "value not an object": {"value": [1, 2, 3]},
    "value a string": {"value": "text"},
}


def forge(store: Any, key: str, values: dict[str, Any]) -> None:
    engine = store.engine.execution_options(schema_translate_map={None: store.schema})
    with engine.begin() as conn:
        conn.execute(
            update(items)
            .where(items.c.namespace == namespaces.encode(NS), items.c.key == key)
            .values(**values)
        )


@pytest.mark.parametrize("forgery", list(FORGERIES))
async def test_a_forged_row_fails_alone(
    store_door: Any, forgery: str, caplog: pytest.LogCaptureFixture
) -> None:
    await store_door.put(NS, "good", {"n": 1})
    await store_door.put(NS, "bad", {"n": 2})
    forge(store_door.store, "bad", FORGERIES[forgery])

    with pytest.raises(StoreDecodeError) as raised:
        await store_door.get(NS, "bad")
    assert raised.value.namespace == NS and raised.value.key == "bad"
    assert (await store_door.get(NS, "good")).value == {"n": 1}

    with caplog.at_level(logging.WARNING, logger="langgraph.store.sqlalchemy"):
        found = await store_door.search(NS)
        filtered = await store_door.search(NS, filter={"n": 1})
    assert [item.key for item in found] == ["good"]
    assert [item.key for item in filtered] == ["good"]
    assert "bad" in caplog.text
    assert await store_door.list_namespaces() == [NS]

    await store_door.delete(NS, "bad")
    assert await store_door.get(NS, "bad") is None


@pytest.mark.parametrize("ttl", [1e308, 4_000_000_001, float("nan"), 0, -1, "10"], ids=repr)
async def test_an_out_of_range_ttl_is_refused_before_writing(store_door: Any, ttl: Any) -> None:
    """put(ttl=1e308) was stored on PostgreSQL and then broke every refreshing read of its
    namespace (DataError), and raised a raw ProgrammingError on MariaDB: now a typed
    error, nothing written, on every backend."""
    with pytest.raises(StoreRequestError, match="ttl must be"):
        await store_door.put(NS, "k", {"n": 1}, ttl=ttl)
    assert await store_door.get(NS, "k") is None
    await store_door.put(NS, "k", {"n": 1}, ttl=4_000_000_000)  # the maximum is fine
    await store_door.put(NS, "forever", {"n": 1}, ttl=float("inf"))
    got = await store_door.search(NS, refresh_ttl=True)
    assert sorted(item.key for item in got) == ["forever", "k"]


def test_an_out_of_range_default_ttl_is_refused_when_built() -> None:
    with pytest.raises(StoreRequestError, match="ttl must be"):
        SQLAlchemyStore.from_conn_string(":memory:", ttl={"default_ttl": 1e308})


async def test_a_forged_ttl_does_not_break_refreshing_reads(store_door: Any) -> None:
    """A TTL forged above the maximum into the table is left as it is by refreshing reads
    (its refresh would overflow): reads of the namespace go on."""
    await store_door.put(NS, "good", {"n": 1}, ttl=60)
    await store_door.put(NS, "bad", {"n": 2}, ttl=60)
    forge(store_door.store, "bad", {"ttl_minutes": 1e308})
    assert len(await store_door.search(NS, refresh_ttl=True)) == 2
    assert (await store_door.get(NS, "bad", refresh_ttl=True)).value == {"n": 2}


#: JSON column text a forger may write, beside what the store writes: each read as
#: ``json.loads`` reads it, or as ``Undecodable`` where it raises.
STORED_TEXTS = [
    '{"a": 1}',
    ' {"a": 1} ',
    '{"a": 1} x',
    '{"a": 1}{"b": 2}',
    "",
    "[1, 2",
    "\ufeff{}",
    "[" * 100_000 + "]" * 100_000,
    '{"a": NaN, "b": -Infinity}',
    '"text"',
    "1" * 5_000,
]


@pytest.mark.parametrize("stored", STORED_TEXTS, ids=range(len(STORED_TEXTS)))
def test_json_text_reads_as_json_loads_reads_it_or_as_undecodable(stored: str) -> None:
    got = load_json(stored)
    try:
        want = json.loads(stored)
    except (ValueError, RecursionError):
        assert isinstance(got, Undecodable), got
    else:
        assert json.dumps(got) == json.dumps(want)


async def test_a_namespace_checked_once_is_remembered_within_a_bound(
    store_door: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_prepared, "MAX_CHECKED", 3)
    monkeypatch.setattr(_prepared, "_CHECKED", {})
    for i in range(10):
        await store_door.put(("u", str(i)), "k", {"v": i})
        assert (await store_door.get(("u", str(i)), "k")).value == {"v": i}
        assert len(_prepared._CHECKED) <= 3
    for _ in range(2):  # refused each time: only what passed is remembered
        with pytest.raises(InvalidNamespaceError):
            await store_door.get(("u.1",), "k")
        with pytest.raises(InvalidNamespaceError):
            await store_door.put(("u", "1\x01"), "k", {"v": 0})
    assert await store_door.get(("u", "1"), "k") is not None
