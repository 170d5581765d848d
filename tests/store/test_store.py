"""The BaseStore contract of ``SQLAlchemyStore`` on every backend, through the sync and
the async methods (``store_door``): get/put/delete, batches, search, list_namespaces,
validation, hostile and Unicode strings, vector search, a store beside a saver."""

from __future__ import annotations

import decimal
import math
from typing import Any

import pytest
from langgraph.store.base import (
    GetOp,
    InvalidNamespaceError,
    ListNamespacesOp,
    PutOp,
    SearchOp,
)
from langgraph.store.memory import InMemoryStore

from langgraph.checkpoint.sqlalchemy import StoreRequestError
from langgraph.store.sqlalchemy import SQLAlchemyStore

from ..conftest import Clock, HashEmbeddings, StoreDoor

INDEX_FIELDS = ["text"]


def index_config(fields: list[str] | None = None) -> dict[str, Any]:
    return {"dims": 16, "embed": HashEmbeddings(16), "fields": fields or INDEX_FIELDS}


def keys(items: list[Any]) -> list[tuple[tuple[str, ...], str]]:
    return [(tuple(i.namespace), i.key) for i in items]


# -- get / put / delete ----------------------------------------------------------------


async def test_put_get_delete(store_door: StoreDoor) -> None:
    ns = ("users", "u1")
    assert await store_door.get(ns, "k") is None
    await store_door.put(ns, "k", {"name": "Ada", "n": 1, "tags": ["a"], "d": {"x": None}})
    item = await store_door.get(ns, "k")
    assert item is not None
    assert item.namespace == ns and item.key == "k"
    assert item.value == {"name": "Ada", "n": 1, "tags": ["a"], "d": {"x": None}}
    assert item.created_at.tzinfo is not None and item.updated_at >= item.created_at
    assert await store_door.get(ns, "other") is None
    assert await store_door.get(("users",), "k") is None  # not a prefix lookup
    await store_door.delete(ns, "k")
    assert await store_door.get(ns, "k") is None
    await store_door.delete(ns, "k")  # deleting a missing item is fine
    await store_door.delete(("never",), "k")


async def test_put_none_deletes(store_door: StoreDoor) -> None:
    await store_door.put(("a",), "k", {"v": 1})
    await store_door.put(("a",), "k", None)
    assert await store_door.get(("a",), "k") is None
    assert await store_door.search(("a",)) == []
    assert await store_door.list_namespaces() == []


async def test_overwrite_keeps_created_at(store_factory: Any, mode: str, clock: Clock) -> None:
    door = StoreDoor(store_factory(clock=clock), mode)
    t0 = clock.now
    await door.put(("a",), "k", {"v": 1, "old": True})
    first = await door.get(("a",), "k")
    assert first.created_at == t0 and first.updated_at == t0
    t1 = clock.advance(seconds=90)
    await door.put(("a",), "k", {"v": 2})
    second = await door.get(("a",), "k")
    assert second.value == {"v": 2}  # replaced, not merged
    assert second.created_at == t0
    assert second.updated_at == t1
    # put after a delete is a new item
    await door.delete(("a",), "k")
    t2 = clock.advance(seconds=1)
    await door.put(("a",), "k", {"v": 3})
    third = await door.get(("a",), "k")
    assert third.created_at == t2 == third.updated_at


async def test_empty_value_and_nul_strings(store_door: StoreDoor) -> None:
    await store_door.put(("a",), "empty", {})
    assert (await store_door.get(("a",), "empty")).value == {}
    await store_door.put(("a",), "nul", {"s": "a\x00b", "l": ["\x00"], "d": {"k\x00": "v"}})
    got = (await store_door.get(("a",), "nul")).value
    assert got["s"] == "ab" and got["l"] == [""]
    assert "\x00" not in repr(got)


# -- batch -------------------------------------------------------------------------------


def _batch_ops() -> list[Any]:
    return [
        GetOp(("b",), "x"),
        PutOp(("b",), "x", {"v": 1}),
        GetOp(("b",), "x"),  # still the state before the batch
        SearchOp(("b",), limit=50),
        ListNamespacesOp(match_conditions=(), limit=50),
        PutOp(("b",), "x", {"v": 2}),  # last put of a key wins
        PutOp(("b",), "gone", None),
        PutOp(("b",), "new", {"v": 3}),
        PutOp(("b",), "new", None),  # put then delete: deleted
        PutOp(("c",), "y", None),
        PutOp(("c",), "y", {"v": 4}),  # delete then put: kept
        GetOp(("b",), "gone"),
    ]


def _summary(results: list[Any]) -> list[Any]:
    out: list[Any] = []
    for r in results:
        if isinstance(r, list):
            out.append(
                sorted(x if isinstance(x, tuple) else (tuple(x.namespace), x.key) for x in r)
            )
        elif r is None:
            out.append(None)
        else:
            out.append((tuple(r.namespace), r.key, r.value))
    return out


async def test_batch_reads_see_state_before_writes(store_door: StoreDoor) -> None:
    reference = InMemoryStore()
    for s in (reference,):
        s.put(("b",), "x", {"v": 0})
        s.put(("b",), "gone", {"v": -1})
    await store_door.put(("b",), "x", {"v": 0})
    await store_door.put(("b",), "gone", {"v": -1})
    results = await store_door.batch(_batch_ops())
    expected = reference.batch(_batch_ops())
    assert _summary(results) == _summary(expected)
    assert results[0].value == {"v": 0} and results[2].value == {"v": 0}
    assert results[11].value == {"v": -1}
    assert (await store_door.get(("b",), "x")).value == {"v": 2}
    assert await store_door.get(("b",), "gone") is None
    assert await store_door.get(("b",), "new") is None
    assert (await store_door.get(("c",), "y")).value == {"v": 4}
    assert sorted(await store_door.list_namespaces()) == [("b",), ("c",)]
    assert await store_door.batch([]) == []


async def _refused_raw_ops(door: StoreDoor, ops: list[Any]) -> None:
    await door.put(("foo", "bar"), "k", {"v": 1})
    for op in ops:
        with pytest.raises(InvalidNamespaceError):
            await door.batch([PutOp(("ok",), "k", {"v": 0}), op])
        assert (await door.get(("foo", "bar"), "k")).value == {"v": 1}, op
        assert await door.get(("ok",), "k") is None, op
        assert await door.list_namespaces() == [("foo", "bar")], op


async def test_batch_validates_namespaces_of_raw_ops(store_door: StoreDoor) -> None:
    """Ops given to batch directly skip BaseStore's checks; the store checks them itself
    and writes nothing of a refused batch."""
    await _refused_raw_ops(
        store_door,
        [PutOp(("a\x01b",), "k", {"v": 2}), PutOp(("",), "k", {"v": 2}), GetOp(("",), "k")],
    )


async def test_batch_refuses_dots_and_nul_in_raw_ops(store_door: StoreDoor) -> None:
    await _refused_raw_ops(
        store_door,
        [
            PutOp(("foo.bar",), "k", {"v": 2}),
            GetOp(("foo.bar",), "k"),
            SearchOp(("foo.bar",)),
            PutOp(("a\x00b",), "k", {"v": 2}),
        ],
    )


# -- search ------------------------------------------------------------------------------


async def test_search_namespace_prefix(store_door: StoreDoor) -> None:
    spaces = [
        ("users",),
        ("users", "u1"),
        ("users", "u1", "notes"),
        ("users", "u2"),
        ("users-x",),
        ("users-x", "u1"),
        ("usersx",),
        ("users ",),
        ("Users",),
        ("user",),
        ("other", "users"),
    ]
    for ns in spaces:
        await store_door.put(ns, "k", {"ns": list(ns)})
    found = set(keys(await store_door.search(("users",), limit=100)))
    assert found == {(ns, "k") for ns in spaces[:4]}
    found = set(keys(await store_door.search(("users", "u1"), limit=100)))
    assert found == {(("users", "u1"), "k"), (("users", "u1", "notes"), "k")}
    assert keys(await store_door.search(("users", "u1", "notes", "x"))) == []
    assert keys(await store_door.search(("user",))) == [(("user",), "k")]
    assert len(await store_door.search((), limit=100)) == len(spaces)
    items = await store_door.search(("users", "u2"))
    assert items[0].value == {"ns": ["users", "u2"]} and items[0].score is None


async def test_search_limit_offset_newest_first(
    store_factory: Any, mode: str, clock: Clock
) -> None:
    door = StoreDoor(store_factory(clock=clock), mode)
    for i in range(6):
        clock.advance(seconds=1)
        await door.put(("p", str(i % 2)), f"k{i}", {"i": i})
    order = [i.key for i in await door.search(("p",), limit=100)]
    assert order == ["k5", "k4", "k3", "k2", "k1", "k0"]
    assert [i.key for i in await door.search(("p",), limit=2)] == ["k5", "k4"]
    assert [i.key for i in await door.search(("p",), limit=2, offset=2)] == ["k3", "k2"]
    assert [i.key for i in await door.search(("p",), limit=10, offset=5)] == ["k0"]
    assert await door.search(("p",), limit=10, offset=6) == []
    assert [
        i.key for i in await door.search(("p",), filter={"i": {"$gte": 2}}, limit=2, offset=1)
    ] == [
        "k4",
        "k3",
    ]
    clock.advance(seconds=1)
    await door.put(("p", "0"), "k0", {"i": 0})  # an update moves it to the top
    assert [i.key for i in await door.search(("p",), limit=2)] == ["k0", "k5"]
    # ties on updated_at: namespace, then key, both descending (the store's order), the
    # same on every backend so that pages do not overlap
    clock.advance(seconds=1)
    await door.batch(
        [PutOp(("q", "b"), "2", {}), PutOp(("q", "a"), "9", {}), PutOp(("q", "a"), "1", {})]
    )
    assert keys(await door.search(("q",))) == [
        (("q", "b"), "2"),
        (("q", "a"), "9"),
        (("q", "a"), "1"),
    ]


async def test_search_filters(store_door: StoreDoor) -> None:
    await store_door.put(("f",), "1", {"color": "red", "n": 1, "d": {"x": 1, "y": 2}, "l": [1, 2]})
    await store_door.put(("f",), "2", {"color": "blue", "n": 2.5, "d": {"x": 2}})
    await store_door.put(("f",), "3", {"color": "red", "n": 3, "flag": True})

    async def found(f: dict[str, Any]) -> set[str]:
        return {i.key for i in await store_door.search(("f",), filter=f, limit=50)}

    assert await found({"color": "red"}) == {"1", "3"}
    assert await found({"color": "red", "n": 3}) == {"3"}
    assert await found({"n": 1.0}) == {"1"}
    assert await found({"n": {"$gt": 1}}) == {"2", "3"}
    assert await found({"n": {"$gte": 1, "$lt": 3}}) == {"1", "2"}
    assert await found({"color": {"$ne": "red"}}) == {"2"}
    assert await found({"flag": {"$ne": True}}) == {"1", "2"}
    assert await found({"flag": None}) == {"1", "2"}
    assert await found({"flag": 1}) == set()  # True is not 1 (documented difference)
    assert await found({"d": {"x": 1}}) == {"1"}
    assert await found({"l": [1, 2]}) == {"1"}
    assert await found({"l": [2, 1]}) == set()
    assert await found({"color": "RED"}) == set()
    assert await found({}) == {"1", "2", "3"}
    # exact 64-bit integers (InMemoryStore compares through float and misses these)
    await store_door.put(("f",), "big", {"n": 2**63 - 1})
    assert await found({"n": {"$gt": 2**63 - 2}}) == {"big"}
    assert await found({"n": 2**63 - 2}) == set()
    assert await found({"n": {"$lt": 2**63 - 1, "$gt": 3}}) == set()
    # filters the store cannot mean are refused, with a ValueError/TypeError
    for bad in (
        {"n": {"$in": [1]}},
        {"n": {"$gt": 0, "x": 2}},
        {"n": 2**70},
        {"n": {"$eq": math.inf}},  # an infinity bounds $gt & co only (test_store_filter_numbers)
        {"n": math.nan},
        {"n": object()},
    ):
        with pytest.raises((ValueError, TypeError)):
            await found(bad)


# -- list_namespaces ---------------------------------------------------------------------

SPACES = [
    ("a",),
    ("a", "b"),
    ("a", "b", "c"),
    ("a", "b", "c", "d"),
    ("a", "b-c"),
    ("a", "x", "c"),
    ("b", "b"),
    ("b", "x", "c"),
    ("users", "u1", "memories"),
    ("users", "u2", "memories"),
    ("users", "u2", "prefs"),
]


async def test_list_namespaces(store_door: StoreDoor) -> None:
    for ns in reversed(SPACES):
        await store_door.put(ns, "k", {})
    ls = store_door.list_namespaces
    assert await ls() == sorted(SPACES)
    assert await ls() == SPACES  # already in Python tuple order
    assert await ls(prefix=("a", "b")) == [("a", "b"), ("a", "b", "c"), ("a", "b", "c", "d")]
    assert await ls(suffix=("c",)) == [("a", "b", "c"), ("a", "x", "c"), ("b", "x", "c")]
    assert await ls(max_depth=1) == [("a",), ("b",), ("users",)]
    assert await ls(prefix=("a",), max_depth=2) == [("a",), ("a", "b"), ("a", "b-c"), ("a", "x")]
    assert await ls(limit=3) == SPACES[:3]
    assert await ls(limit=3, offset=3) == SPACES[3:6]
    assert await ls(offset=100) == []
    assert await ls(max_depth=1, limit=1, offset=1) == [("b",)]
    assert await ls(prefix=("zzz",)) == []
    assert await ls(prefix=("a", "b", "c", "d", "e")) == []
    # a deleted item's namespace disappears
    await store_door.delete(("a", "b-c"), "k")
    assert ("a", "b-c") not in await ls()


async def test_list_namespaces_wildcards(store_door: StoreDoor) -> None:
    for ns in reversed(SPACES):
        await store_door.put(ns, "k", {})
    ls = store_door.list_namespaces
    assert await ls(prefix=("*",)) == sorted(SPACES)
    assert await ls(prefix=("a", "*", "c")) == [
        ("a", "b", "c"),
        ("a", "b", "c", "d"),
        ("a", "x", "c"),
    ]
    assert await ls(suffix=("*", "c")) == [("a", "b", "c"), ("a", "x", "c"), ("b", "x", "c")]
    assert await ls(suffix=("b", "*")) == [("a", "b", "c"), ("b", "b")]
    assert await ls(prefix=("users", "*"), suffix=("memories",)) == [
        ("users", "u1", "memories"),
        ("users", "u2", "memories"),
    ]
    assert await ls(prefix=("*", "b")) == [
        ("a", "b"),
        ("a", "b", "c"),
        ("a", "b", "c", "d"),
        ("b", "b"),
    ]
    assert await ls(prefix=("*", "*", "*", "*")) == [("a", "b", "c", "d")]
    assert await ls(prefix=("*", "*"), max_depth=2) == [
        ("a", "b"),
        ("a", "b-c"),
        ("a", "x"),
        ("b", "b"),
        ("b", "x"),
        ("users", "u1"),
        ("users", "u2"),
    ]


# -- validation --------------------------------------------------------------------------


INVALID_NAMESPACES = [
    ("a.b",),
    ("",),
    ("a", ""),
    ("a\x01b",),
    ("a", "b\x00"),
    (),
    ("langgraph", "x"),
]


async def test_invalid_namespace(store_door: StoreDoor) -> None:
    await store_door.put(("a",), "k", {"v": 1})
    for namespace in INVALID_NAMESPACES:
        with pytest.raises(InvalidNamespaceError):
            await store_door.put(namespace, "k", {"v": 2})
        assert await store_door.list_namespaces() == [("a",)], namespace
        if namespace and namespace[0] != "langgraph":  # the root is refused for puts only
            with pytest.raises(InvalidNamespaceError):
                await store_door.get(namespace, "k")
        if "\x01" in "".join(namespace):
            with pytest.raises(InvalidNamespaceError):
                await store_door.search(namespace)
            with pytest.raises((InvalidNamespaceError, ValueError)):
                await store_door.list_namespaces(prefix=namespace)


async def test_too_long_namespace_and_key(store_door: StoreDoor) -> None:
    ok_ns = ("n" * 150, "m" * 149)  # 300 characters joined
    await store_door.put(ok_ns, "k" * 300, {"v": 1})
    assert (await store_door.get(ok_ns, "k" * 300)).value == {"v": 1}
    with pytest.raises(ValueError, match="300"):
        await store_door.put(("n" * 150, "m" * 150), "k", {"v": 1})
    with pytest.raises(ValueError, match="300"):
        await store_door.put(("a",), "k" * 301, {"v": 1})
    with pytest.raises(ValueError):
        await store_door.put(("a",), "", {"v": 1})
    # multi-byte characters count as characters
    await store_door.put(("é" * 300,), "😀" * 300, {"v": 2})
    assert (await store_door.get(("é" * 300,), "😀" * 300)).value == {"v": 2}
    assert await store_door.list_namespaces() == sorted([("é" * 300,), ok_ns])


BAD_VALUES: list[dict[str, Any]] = [
    {"x": math.nan},
    {"x": math.inf},
    {"x": [1, -math.inf]},
    {"x": object()},
    {"x": 2**70},
    {"x": -(2**70)},
    {"x": {1, 2}},
    {"x": "\ud800"},
    {"x": b"bytes"},
    {"x": {"deep": [{"deeper": math.nan}]}},
]


async def test_bad_values_raise_before_writing(store_door: StoreDoor) -> None:
    await store_door.put(("a",), "k", {"keep": 1})
    for bad in BAD_VALUES:
        with pytest.raises((ValueError, TypeError)):
            await store_door.put(("a",), "k", bad)
        with pytest.raises((ValueError, TypeError)):
            await store_door.put(("a",), "new", bad)
        with pytest.raises((ValueError, TypeError)):
            await store_door.batch([PutOp(("a",), "k2", {"ok": 1}), PutOp(("b",), "k", bad)])
        assert (await store_door.get(("a",), "k")).value == {"keep": 1}, bad
        assert keys(await store_door.search((), limit=50)) == [(("a",), "k")], bad
        assert await store_door.list_namespaces() == [("a",)], bad


async def test_large_ints_and_floats_round_trip(store_door: StoreDoor) -> None:
    value = {"max": 2**63 - 1, "min": -(2**63), "f": 0.1, "small": 1e-300, "t": True}
    await store_door.put(("a",), "k", value)
    got = (await store_door.get(("a",), "k")).value
    assert got == value
    assert type(got["t"]) is bool and type(got["max"]) is int and type(got["f"]) is float


async def _floats_stay_floats(door: StoreDoor, numbers: list[float]) -> None:
    for n, number in enumerate(numbers):
        await door.put(("a",), str(n), {"x": number, "l": [number]})
        got = (await door.get(("a",), str(n))).value
        assert type(got["x"]) is float and got["x"] == number, (number, got)
        assert type(got["l"][0]) is float and got["l"][0] == number, (number, got)
        found = await door.search(("a",), filter={"x": number})
        assert keys(found) == [(("a",), str(n))] and type(found[0].value["x"]) is float
        await door.put(("again",), str(n), got)  # what was read can be written back


async def test_floats_stay_floats(store_door: StoreDoor) -> None:
    await _floats_stay_floats(store_door, [2.0, -0.5, 5e-324, 1e-300, 123456.789, 1e15])


async def test_large_floats_stay_floats(store_door: StoreDoor, backend: str) -> None:
    """Whole floats Python writes with an exponent stay floats, and -0.0 keeps its sign,
    except on PostgreSQL, where JSONB keeps numbers as decimals and reads them back as the
    int they print as and -0.0 as 0.0 (documented in docs/store.md, as PostgresStore)."""
    numbers = [1e16, 1.5e20, 1e300, -2e22]
    if backend != "postgres":
        await _floats_stay_floats(store_door, [*numbers, -0.0])
        assert math.copysign(1, (await store_door.get(("a",), "4")).value["x"]) == -1
        return
    for n, number in enumerate([*numbers, -0.0]):
        await store_door.put(("a",), str(n), {"x": number})
        got = (await store_door.get(("a",), str(n))).value["x"]
        expected = int(decimal.Decimal(repr(number))) if number else 0.0
        assert got == expected and type(got) is type(expected), (number, got)
        found = await store_door.search(("a",), filter={"x": number})
        assert keys(found) == [(("a",), str(n))], number


# -- strings -----------------------------------------------------------------------------


async def test_unicode_and_case_are_distinct(store_door: StoreDoor) -> None:
    pairs = ["A", "a", "a ", " a", "ß", "ss", "é", "e\u0301", "É", "😀", "İ", "i", "\u0131"]
    for text in pairs:
        await store_door.put((text,), text, {"text": text})
        await store_door.put(("same",), text, {"text": text})
    for text in pairs:
        assert (await store_door.get((text,), text)).value == {"text": text}
        assert (await store_door.get(("same",), text)).value == {"text": text}
        assert keys(await store_door.search((text,))) == [((text,), text)]
        got = await store_door.search(("same",), filter={"text": text}, limit=50)
        assert keys(got) == [(("same",), text)]
    assert len(await store_door.search(("same",), limit=50)) == len(pairs)
    assert await store_door.list_namespaces(limit=50) == sorted([(t,) for t in pairs] + [("same",)])
    assert await store_door.get(("a",), "A") is None
    assert await store_door.get(("same",), "a  ") is None


HOSTILE = [
    "'",
    '"',
    "%",
    "_",
    "*",
    "\\",
    "a%",
    "a_",
    "%_%",
    "' OR '1'='1",
    '"; DROP TABLE lgsa_store_items; --',
    "$1",
    "?",
    ":name",
    "%(x)s",
    "[a-z]",
    "^$",
    "a|b",
    "(",
    "\x02",
    "\t\n",
    "\\x01",
]


async def test_hostile_strings(store_door: StoreDoor) -> None:
    await store_door.put(("ab",), "ab", {"f": "ab"})
    await store_door.put(("a",), "plain", {"f": "plain"})
    for i, text in enumerate(HOSTILE):
        await store_door.put((text,), text, {"f": text, text: i})
        await store_door.put(("h", text), text, {"f": text})
    for i, text in enumerate(HOSTILE):
        assert (await store_door.get((text,), text)).value == {"f": text, text: i}
        assert keys(await store_door.search((text,), limit=50)) == [((text,), text)]
        found = set(keys(await store_door.search((), filter={"f": text}, limit=50)))
        assert found == {((text,), text), (("h", text), text)}
        if text.startswith("$"):  # a top-level "$" key is refused (no logical operators)
            with pytest.raises(StoreRequestError, match="logical operators"):
                await store_door.search((), filter={text: i}, limit=50)
        else:
            found = set(keys(await store_door.search((), filter={text: i}, limit=50)))
            assert found == {((text,), text)}
        if text != "*":  # the wildcard label
            assert await store_door.list_namespaces(prefix=(text,)) == [(text,)]
            assert await store_door.list_namespaces(prefix=("h", text)) == [("h", text)]
            assert await store_door.list_namespaces(suffix=(text,)) == sorted(
                [(text,), ("h", text)]
            )
    expected = sorted([("ab",), ("a",), ("h",)] + [(t,) for t in HOSTILE])
    assert await store_door.list_namespaces(max_depth=1, limit=100) == expected
    assert len(await store_door.search((), limit=100)) == 2 + 2 * len(HOSTILE)
    # still intact
    assert (await store_door.get(("ab",), "ab")).value == {"f": "ab"}


# -- vector search -----------------------------------------------------------------------

DOCS = {
    "food": {"text": "pizza pasta", "other": "dog"},
    "weather": {"text": "rain sunny cold"},
    "pet": {"text": "dog", "other": "pizza"},
}


async def test_vector_search_ranks(store_factory: Any, mode: str) -> None:
    config = index_config()
    door = StoreDoor(store_factory(index=config), mode)
    for key, value in DOCS.items():
        await door.put(("docs",), key, value)
    await door.put(("docs",), "plain", {"text": "pizza unembedded"}, index=False)
    await door.put(("docs",), "notext", {"title": "pizza"})  # no indexed field
    for query, best in (("pizza", "food"), ("cold rain", "weather"), ("dog", "pet")):
        results = await door.search(("docs",), query=query, limit=10)
        assert results[0].key == best, (query, [(r.key, r.score) for r in results])
        scored = [r for r in results if r.score is not None]
        assert [r.key for r in results[: len(scored)]] == [r.key for r in scored]
        assert {r.key for r in results if r.score is None} == {"plain", "notext"}
        assert all(r.score is None for r in results[-2:])
        assert scored == sorted(scored, key=lambda r: -r.score)
        assert all(-1.0 - 1e-6 <= r.score <= 1.0 + 1e-6 for r in scored)
    assert math.isclose((await door.search(("docs",), query="dog"))[0].score, 1.0, abs_tol=1e-5)
    assert "pizza unembedded" not in config["embed"].calls
    # index=False: not embedded, still found by filter search
    only = {"text": "pizza unembedded"}
    assert keys(await door.search(("docs",), filter=only)) == [(("docs",), "plain")]
    got = await door.search(("docs",), query="pizza", filter=only)
    assert keys(got) == [(("docs",), "plain")] and got[0].score is None
    # limit/offset over the ranking
    ranked = [r.key for r in await door.search(("docs",), query="dog", limit=10)]
    assert [r.key for r in await door.search(("docs",), query="dog", limit=2, offset=1)] == ranked[
        1:3
    ]
    # a query without the namespace's items: nothing
    assert await door.search(("none",), query="pizza") == []


async def test_vector_index_override_and_update(store_factory: Any, mode: str) -> None:
    config = index_config()
    door = StoreDoor(store_factory(index=config), mode)
    await door.put(("d",), "a", {"text": "weather", "other": "pizza"}, index=["other"])
    await door.put(("d",), "b", {"text": "pizza", "other": "weather"})
    results = await door.search(("d",), query="pizza")
    assert {r.key for r in results} == {"a", "b"}  # a through "other", b through "text"
    # a's "text" (weather) was not embedded: index=["other"] replaced the default fields
    assert all(
        r.score is not None and r.score < 0.5 for r in await door.search(("d",), query="weather")
    )
    assert all(r.score is not None for r in results)
    assert math.isclose(results[0].score, 1.0, abs_tol=1e-5)
    # re-put without index=: the default fields again, old vectors gone
    await door.put(("d",), "a", {"text": "dog", "other": "pizza"})
    results = await door.search(("d",), query="pizza")
    assert results[0].key == "b"
    # index=False on update drops the vectors
    await door.put(("d",), "b", {"text": "pizza"}, index=False)
    results = await door.search(("d",), query="pizza")
    assert [(r.key, r.score is None) for r in results][-1] == ("b", True)
    # the last put of a key in a batch wins, vectors too
    await door.batch(
        [
            PutOp(("d",), "c", {"text": "pizza"}),
            PutOp(("d",), "c", {"text": "sunny"}, index=["text"]),
        ]
    )
    assert (await door.search(("d",), query="sunny"))[0].key == "c"
    assert [r.key for r in await door.search(("d",), query="pizza") if r.score] == []
    await door.delete(("d",), "c")
    # delete drops vectors too
    await door.delete(("d",), "a")
    assert [r.key for r in await door.search(("d",), query="dog")] == ["b"]
    stats = await door.stats()
    assert stats.items == 1 and stats.vectors == 0


async def test_vector_search_nested_and_list_fields(store_factory: Any, mode: str) -> None:
    door = StoreDoor(store_factory(index=index_config(["profile.bio", "tags[*]"])), mode)
    await door.put(("n",), "1", {"profile": {"bio": "rain cold"}, "tags": ["dog", "code"]})
    await door.put(("n",), "2", {"profile": {"bio": "pizza"}, "tags": ["sunny"]})
    await door.put(("n",), "3", {"profile": {}})
    assert (await door.search(("n",), query="dog"))[0].key == "1"
    assert (await door.search(("n",), query="pizza"))[0].key == "2"
    assert (await door.search(("n",), query="sunny"))[0].key == "2"
    results = await door.search(("n",), query="pizza")
    assert results[-1].key == "3" and results[-1].score is None


async def test_vector_search_in_batches_and_with_a_plain_function(
    store_factory: Any, mode: str
) -> None:
    """``embed`` may be a plain function of a list of texts; several searches with queries
    in one batch each get their own ranking, and puts in the same batch are not seen."""
    calls: list[list[str]] = []
    model = HashEmbeddings(16)

    def embed(texts: list[str]) -> list[list[float]]:
        calls.append(list(texts))
        return model.embed_documents(texts)

    door = StoreDoor(store_factory(index={"dims": 16, "embed": embed, "fields": ["text"]}), mode)
    await door.batch([PutOp(("b",), k, v) for k, v in DOCS.items()])
    assert sorted(t for batch in calls for t in batch) == sorted(v["text"] for v in DOCS.values())
    results = await door.batch(
        [
            SearchOp(("b",), query="pizza", limit=1),
            PutOp(("b",), "late", {"text": "dog dog"}),
            SearchOp(("b",), query="dog", limit=1),
            SearchOp(("b",), query="cold", limit=3, offset=1),
            SearchOp(("b",), query="dog", filter={"text": "pizza pasta"}),
        ]
    )
    assert [[i.key for i in r] for r in (results[0], results[2], results[4])] == [
        ["food"],
        ["pet"],
        ["food"],
    ]
    assert results[1] is None
    assert len(results[3]) == 2 and "weather" not in [i.key for i in results[3]]
    assert {i.key for i in await door.search(("b",), query="dog", limit=2)} == {"pet", "late"}


async def test_vector_pages_join_up(store_factory: Any, mode: str) -> None:
    """Pages of a query search (limit/offset) join up to the whole ranking, across the
    boundary between scored items and items without vectors: no item twice, none lost."""
    door = StoreDoor(store_factory(index=index_config()), mode)
    words = ["pizza", "pasta", "rain", "sunny", "cold", "dog"]
    for i in range(23):
        value = {"text": " ".join(words[(i + j) % 6] for j in range(1 + i % 3))}
        await door.put(("vp",), f"k{i:02}", value if i % 4 else {"other": i})
    whole = await door.search(("vp",), query="pizza rain", limit=100)
    assert len(whole) == 23
    pages: list[Any] = []
    for offset in range(0, 30, 4):
        pages += await door.search(("vp",), query="pizza rain", limit=4, offset=offset)
    assert sorted(i.key for i in pages) == sorted(i.key for i in whole)
    assert [i.score for i in pages] == [i.score for i in whole]
    assert [i.score is None for i in whole] == [False] * 17 + [True] * 6


@pytest.mark.parametrize(
    "index",
    [
        {"dims": 0, "embed": HashEmbeddings(16)},
        {"dims": -1, "embed": HashEmbeddings(16)},
        {"dims": "16", "embed": HashEmbeddings(16)},
        {"dims": 16},
    ],
    ids=["dims-0", "dims-negative", "dims-str", "no-embed"],
)
def test_bad_index_config_is_refused(index: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        SQLAlchemyStore.from_conn_string(":memory:", index=index)  # type: ignore[arg-type]


async def test_embedding_failures_write_nothing(store_factory: Any, mode: str) -> None:
    """A wrong-sized vector (ValueError) or a failing embedding service: the batch raises
    and nothing of it is written (the embedding runs before the transaction)."""

    def down(texts: list[str]) -> list[list[float]]:
        raise RuntimeError("embedding service down")

    for embed, error in ((HashEmbeddings(8), ValueError), (down, RuntimeError)):
        door = StoreDoor(
            store_factory(index={"dims": 16, "embed": embed, "fields": ["text"]}), mode
        )
        await door.put(("a",), "keep", {"text": "old"}, index=False)
        with pytest.raises(error):
            await door.batch([PutOp(("a",), "new", {"v": 1}), PutOp(("a",), "k", {"text": "x"})])
        with pytest.raises(error):
            await door.put(("a",), "keep", {"text": "pizza"})
        assert keys(await door.search(("a",))) == [(("a",), "keep")]
        assert (await door.get(("a",), "keep")).value == {"text": "old"}
        stats = await door.stats()
        assert (stats.items, stats.vectors) == (1, 0)


async def test_query_without_index_is_a_plain_search(store_door: StoreDoor) -> None:
    await store_door.put(("a",), "k", {"text": "pizza"})
    results = await store_door.search(("a",), query="pizza")
    assert keys(results) == [(("a",), "k")] and results[0].score is None


# -- beside a saver ----------------------------------------------------------------------


async def test_store_shares_the_savers_engines(saver_factory: Any, mode: str) -> None:
    saver = saver_factory()
    store = SQLAlchemyStore(saver.engine, saver.async_engine, schema=saver.schema)
    store.setup()
    door = StoreDoor(store, mode)
    await door.put(("s",), "k", {"v": 1})
    assert (await door.get(("s",), "k")).value == {"v": 1}
    from langgraph.checkpoint.base import empty_checkpoint

    config = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    saved = saver.put(config, empty_checkpoint(), {"source": "input", "step": -1}, {})
    assert saver.get_tuple(saved) is not None
    if mode == "async":
        await store.aclose()
    else:
        store.close()
    # the saver's engines still work after the store is closed
    assert saver.get_tuple(saved) is not None
    assert await saver.aget_tuple(saved) is not None
    again = SQLAlchemyStore(saver.engine, saver.async_engine, schema=saver.schema)
    assert (await StoreDoor(again, mode).get(("s",), "k")).value == {"v": 1}
    await again.aclose()


# -- paging, sizes, timestamps -----------------------------------------------------------

PAGING_FILTERS: list[dict[str, Any]] = [
    {},
    {"even": True},
    {"i": {"$gte": 5}},
    {"i": {"$lt": 20}, "even": False},
    {"d": {"m3": 0}},
    {"l": [0, 1]},
    {"s": {"$ne": "x0"}},
    {"tag": None},
]


async def test_pages_join_up(store_factory: Any, mode: str, clock: Clock) -> None:
    """Pages of a filtered search (limit/offset), joined, are the whole result in order:
    whether the database or Python applies the filter and the paging."""
    door = StoreDoor(store_factory(clock=clock), mode)
    for i in range(30):
        value: dict[str, Any] = {"i": i, "even": i % 2 == 0, "d": {"m3": i % 3}, "s": f"x{i % 4}"}
        value["l"] = [i % 2, 1]
        if i % 5:
            value["tag"] = "t"
        clock.advance(seconds=1)  # one put per tick: a strict newest-first order
        await door.put(("pg", str(i % 3)), f"k{i:02}", value)
    for filter_ in PAGING_FILTERS:
        whole = keys(await door.search(("pg",), filter=filter_, limit=1000))
        assert whole, filter_
        assert whole == sorted(whole, key=lambda k: -int(k[1][1:])), filter_  # newest first
        pages: list[Any] = []
        for offset in range(0, len(whole) + 7, 7):
            pages += keys(await door.search(("pg",), filter=filter_, limit=7, offset=offset))
        assert pages == whole, filter_


async def test_limit_zero_and_large_batches(store_door: StoreDoor) -> None:
    n = 1500  # beyond SQLite's 999 bound parameters and MySQL's small packets
    await store_door.batch([PutOp(("big", str(i % 7)), f"k{i}", {"i": i}) for i in range(n)])
    assert await store_door.search(("big",), limit=0) == []
    assert await store_door.list_namespaces(limit=0) == []
    got = await store_door.batch([GetOp(("big", str(i % 7)), f"k{i}") for i in range(n)])
    assert [g.value["i"] for g in got] == list(range(n))
    assert len(await store_door.search(("big",), limit=n + 10)) == n
    assert len(await store_door.search(("big",), filter={"i": {"$gte": 100}}, limit=n)) == n - 100
    assert len(await store_door.list_namespaces()) == 7
    await store_door.batch([PutOp(("big", str(i % 7)), f"k{i}", None) for i in range(0, n, 2)])
    assert len(await store_door.search(("big",), limit=n)) == n // 2


async def test_timestamps_round_trip_to_the_microsecond(
    store_factory: Any, mode: str, clock: Clock
) -> None:
    door = StoreDoor(store_factory(clock=clock), mode)
    for micro in (0, 1, 123456, 999999):
        clock.now = clock.now.replace(microsecond=micro)
        await door.put(("ts",), str(micro), {})
        item = await door.get(("ts",), str(micro))
        assert item.created_at == clock.now == item.updated_at
        assert item.created_at.utcoffset() is not None and not item.created_at.utcoffset()
        found = await door.search(("ts",), filter={}, limit=1)
        assert found[0].updated_at == clock.now
        clock.advance(seconds=1)


async def test_concurrent_writers(store_door: StoreDoor) -> None:
    """Eight writers at once (threads for the sync door, tasks for the async one) on
    their own keys and on one shared key: every write lands, the shared key holds one
    writer's last value, nothing fails."""
    import asyncio

    async def writer(w: int) -> None:
        for i in range(15):
            await store_door.put(("c", str(w)), f"k{i}", {"w": w, "i": i})
            await store_door.put(("c",), "shared", {"w": w, "i": i})

    if store_door.is_async:
        await asyncio.gather(*(writer(w) for w in range(8)))
    else:
        await asyncio.gather(*(asyncio.to_thread(asyncio.run, writer(w)) for w in range(8)))
    assert len(await store_door.search(("c",), limit=1000)) == 8 * 15 + 1
    shared = (await store_door.get(("c",), "shared")).value
    assert shared["i"] == 14 and 0 <= shared["w"] < 8
    assert len(await store_door.list_namespaces()) == 9


async def test_lifecycle(
    backend: str, request: pytest.FixtureRequest, tmp_path: Any, mode: str
) -> None:
    """``from_conn_string`` gives the store itself, a context manager (``with`` or
    ``async with``); setup is idempotent; a second store on a file or server database
    sees the first one's items."""
    from ..provision import new_saver_args

    args = new_saver_args(backend, request, tmp_path)
    url = args.pop("conn_string")
    if mode == "async":
        async with SQLAlchemyStore.from_conn_string(url, **args) as store:
            await store.asetup()
            await store.asetup()
            await store.aput(("l",), "k", {"v": 1})
            assert (await store.aget(("l",), "k")).value == {"v": 1}
    else:
        with SQLAlchemyStore.from_conn_string(url, **args) as store:
            store.setup()
            store.setup()
            store.put(("l",), "k", {"v": 1})
            assert store.get(("l",), "k").value == {"v": 1}
    if backend == "sqlite-memory":
        return  # gone with its engines
    again = SQLAlchemyStore.from_conn_string(url, **args)
    try:
        again.setup()
        assert (await StoreDoor(again, mode).get(("l",), "k")).value == {"v": 1}
    finally:
        await again.aclose()


async def test_large_values(store_door: StoreDoor) -> None:
    value = {
        "text": "é😀x" * 500_000,
        "list": list(range(20_000)),
        "d": {str(i): i for i in range(2000)},
    }
    await store_door.put(("big",), "k", value)
    assert (await store_door.get(("big",), "k")).value == value
    found = await store_door.search(("big",), filter={"list": list(range(20_000))})
    assert [i.key for i in found] == ["k"] and found[0].value == value


async def test_tricky_strings_round_trip_and_filter(store_door: StoreDoor) -> None:
    texts = [
        "\r\n",
        "\u2028\u2029",
        "\\u0000",
        "\ufeffbom",
        "👩\u200d👩\u200d👧",
        "e\u0301" * 50,
        "\x1f\x7f\x80",
        "'\"\\",
        " ",
        "",
        "null",
        "1",
        "true",
        "{}",
    ]
    for i, text in enumerate(texts):
        await store_door.put(("s",), f"k{i}", {"t": text, "l": [text], "d": {text: text}})
    for i, text in enumerate(texts):
        value = (await store_door.get(("s",), f"k{i}")).value
        assert value == {"t": text, "l": [text], "d": {text: text}}, text
        found = await store_door.search(("s",), filter={"t": text}, limit=50)
        assert [f.key for f in found] == [f"k{i}"], text
        found = await store_door.search(("s",), filter={"d": {text: text}}, limit=50)
        assert [f.key for f in found] == [f"k{i}"], text


async def test_out_of_range_paging_is_refused(store_door: StoreDoor) -> None:
    """limit/offset/max_depth outside 0..2**31-1 and filters of over 100 keys raise a
    ValueError before any query (drivers overflowed, SQLite refused the expression)."""
    await store_door.put(("a", "b"), "k", {"v": 1})
    for kwargs in ({"limit": 2**31}, {"offset": 2**31}, {"limit": -1}, {"offset": -1}):
        with pytest.raises(ValueError):
            await store_door.search(("a",), **kwargs)
        with pytest.raises(ValueError):
            await store_door.list_namespaces(**kwargs)
    with pytest.raises(ValueError):
        await store_door.list_namespaces(max_depth=-1)
    with pytest.raises(ValueError):
        await store_door.search(("a",), filter={f"k{i}": 1 for i in range(101)})
    assert await store_door.search(("a",), filter={f"k{i}": None for i in range(100)}) != []
    assert await store_door.search(("a",), limit=2**31 - 1, offset=2**31 - 1) == []
    assert await store_door.list_namespaces(max_depth=0) == [()]


def test_async_methods_from_successive_event_loops(store: SQLAlchemyStore) -> None:
    """A script calling ``asyncio.run(store.aput(...))`` again and again: each run is a new
    event loop, and the store's async connections must follow."""
    import asyncio

    for i in range(3):
        asyncio.run(store.aput(("loops",), f"k{i}", {"i": i}))
        assert asyncio.run(store.aget(("loops",), f"k{i}")).value == {"i": i}
        assert len(asyncio.run(store.asearch(("loops",)))) == i + 1
        assert asyncio.run(store.alist_namespaces()) == [("loops",)]
    assert len(store.search(("loops",))) == 3
    # and from threads, each running event loops of its own, at the same time
    from concurrent.futures import ThreadPoolExecutor

    def work(t: int) -> None:
        for i in range(3):
            asyncio.run(store.aput(("threads", str(t)), f"k{i}", {"i": i}))
            assert asyncio.run(store.aget(("threads", str(t)), f"k{i}")) is not None

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(work, range(4)))
    assert len(store.search(("threads",), limit=100)) == 12
