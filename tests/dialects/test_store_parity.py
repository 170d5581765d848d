"""``SQLAlchemyStore`` answers searches and namespace listings as LangGraph's reference,
``InMemoryStore``, fed the same items, on every backend.

Searches are compared as SETS of (namespace, key) with a limit above the item count
(``InMemoryStore`` returns insertion order, the store newest first); namespace listings
as exact lists (both sorted). Cases where ``InMemoryStore`` raises (an order comparison
meeting a missing key or a string) or where the store differs by design (``True`` does
not match ``1``; a top-level ``$`` key is refused) are not in the lists; the last tests
pin those differences.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from langgraph.store.memory import InMemoryStore

from langgraph.checkpoint.sqlalchemy import StoreRequestError
from langgraph.store.sqlalchemy import SQLAlchemyStore

from ..conftest import HashEmbeddings
from ..provision import DIALECT_BACKENDS as BACKENDS
from ..provision import new_saver_args

ITEMS: list[tuple[tuple[str, ...], str, dict[str, Any]]] = [
    # equality filters: prefix ("mix",)
    (
        ("mix", "a"),
        "m1",
        {
            "color": "red",
            "n": 1,
            "f": 1.5,
            "tags": ["a", "b"],
            "d": {"x": 1, "y": {"z": "deep"}},
            "s": "1",
            "u": "café",
            "flag": True,
            "nul": None,
        },
    ),
    (
        ("mix", "a"),
        "m2",
        {
            "color": "blue",
            "n": 1.0,
            "f": 2,
            "tags": ["b", "a"],
            "d": {"x": 2},
            "s": "one",
            "u": "cafe",
            "flag": False,
        },
    ),
    (
        ("mix", "a"),
        "m4",
        {
            "color": "red ",
            "n": "1",
            "tags": ["a"],
            "d": {"x": 1.0, "y": {"z": "deep", "w": 1}},
            "u": "日本",
            "nested": [{"a": 1}, {"b": [1, 2]}],
        },
    ),
    (
        ("mix", "b"),
        "m3",
        {"color": "Red", "n": 2, "tags": [], "d": {}, "s": "", "u": "CAFÉ", "nul": 0},
    ),
    (
        ("mix", "b"),
        "m5",
        {
            "color": None,
            "n": -1,
            "f": 0,
            "tags": ["a", "b", "c"],
            "d": "not a dict",
            "u": "😀",
            "zero": 0,
            "empty": "",
        },
    ),
    (("mix", "b"), "m6", {}),
    (
        ("mix", "a", "deep"),
        "m7",
        {"color": "red", "n": 10, "big": 2**53 + 1, "f": 1e-9, "q": 'it\'s "quoted" %_*\\'},
    ),
    (("mix", "a", "deep"), "m8", {"color": "green", "lol": [[1, 2], [3]], "n": 0}),
    # hostile top-level keys: a key is a key, never a path or SQL
    (
        ("keys",),
        "k1",
        {
            "a.b": 1,
            "a": {"b": 2},
            "it's": "q",
            '"dq"': 1,
            "$x": 1,
            "": "empty key",
            "[0]": 1,
            "0": "zero",
            "\\": 1,
            "%": 1,
            "é": 1,
            "a b": 1,
            "$.a": 1,
            "{a}": 1,
        },
    ),
    (("keys",), "k2", {"a.b": 2, "a": {"b": 1}, "a[0]": 1, "0": 0, "$.a": 2}),
    (("keys",), "k3", {"a": [{"b": 1}], "it's": "it's", "%": "%", "_": "_"}),
    (("mix-x",), "sibling", {"color": "red", "n": 1}),
    (("mixa",), "sibling", {"color": "red", "n": 1}),
    # order comparisons: prefix ("num",), every item has numbers n and m
    (("num",), "n1", {"n": 1, "m": 0}),
    (("num",), "n2", {"n": 1.0, "m": 5}),
    (("num",), "n3", {"n": 2.5, "m": -1}),
    (("num",), "n4", {"n": -3, "m": 4.99}),
    (("num",), "n5", {"n": 0, "m": 5.01}),
    (("num", "big"), "n6", {"n": 10**15, "m": 2**53}),
    (("num", "big"), "n7", {"n": -0.5, "m": 1e-300}),
    # order comparisons of booleans: prefix ("bool",), every item has a boolean flag
    (("bool",), "b1", {"flag": True, "lst": [1, "a"]}),
    (("bool",), "b2", {"flag": False, "lst": [2, "b"]}),
    (("bool", "x"), "b3", {"flag": True, "lst": [3]}),
]

MIX = ("mix",)
NUM = ("num",)
BOOL = ("bool",)
ALL: tuple[str, ...] = ()

#: (namespace prefix, filter): each one a search compared with InMemoryStore.
FILTERS: list[Any] = [
    (MIX, {"color": "red"}),
    (ALL, {"color": "red"}),
    (MIX, {"color": "Red"}),
    (MIX, {"color": "red "}),
    (MIX, {"color": None}),
    (MIX, {"color": {"$eq": "red"}}),
    (MIX, {"color": {"$ne": "red"}}),
    (MIX, {"color": {"$ne": None}}),
    (MIX, {"color": {"$eq": None}}),
    (MIX, {"missing": {"$eq": None}}),
    (MIX, {"missing": {"$ne": None}}),
    (MIX, {"nul": {"$eq": None}}),
    (MIX, {"nul": {"$ne": None}}),
    (MIX, {"d": {"missing": {"$eq": None}}}),
    (MIX, {"n": 1}),
    (MIX, {"n": 1.0}),
    (MIX, {"n": "1"}),
    (MIX, {"n": {"$ne": 1}}),
    (MIX, {"n": {"$eq": 1.0}}),
    (MIX, {"f": 1.5}),
    (MIX, {"f": 0}),
    (MIX, {"f": 2.0}),
    (MIX, {"f": 1e-9}),
    (MIX, {"tags": ["a", "b"]}),
    (MIX, {"tags": ["b", "a"]}),
    (MIX, {"tags": []}),
    (MIX, {"tags": ["a"]}),
    (MIX, {"tags": ("a", "b")}),
    (MIX, {"tags": {"$eq": ["a", "b", "c"]}}),
    (MIX, {"tags": {"$ne": ["a"]}}),
    (MIX, {"d": {"x": 1}}),
    (MIX, {"d": {"x": 1.0}}),
    (MIX, {"d": {}}),
    (MIX, {"d": {"y": {"z": "deep"}}}),
    (MIX, {"d": {"x": 1, "y": {"z": "deep", "w": 1}}}),
    (MIX, {"d": {"y": {"z": "deep", "w": 2}}}),
    (MIX, {"d": {"x": None}}),
    (("mix", "a"), {"d": {"x": {"$gt": 1}}}),
    (("mix", "a"), {"d": {"x": {"$ne": 1}}}),
    (MIX, {"d": "not a dict"}),
    (MIX, {"s": ""}),
    (MIX, {"s": "1"}),
    (MIX, {"u": "café"}),
    (MIX, {"u": "cafe"}),
    (MIX, {"u": "CAFÉ"}),
    (MIX, {"u": "日本"}),
    (MIX, {"u": "😀"}),
    (MIX, {"q": 'it\'s "quoted" %_*\\'}),
    (MIX, {"q": "%"}),
    (MIX, {"q": {"$ne": "%"}}),
    (MIX, {"missing": None}),
    (MIX, {"missing": "x"}),
    (MIX, {"missing": {"$ne": "x"}}),
    (MIX, {"color": "red", "n": 1}),
    (MIX, {"color": "red", "n": 10}),
    (MIX, {"color": "red", "missing": None, "n": {"$ne": 10}}),
    (MIX, {"nul": None}),
    (MIX, {"nul": 0}),
    (MIX, {"big": 2**53 + 1}),
    (MIX, {"big": 2**53}),
    (MIX, {"nested": [{"a": 1}, {"b": [1, 2]}]}),
    (MIX, {"nested": [{"a": 1}, {"b": [2, 1]}]}),
    (MIX, {"lol": [[1, 2], [3]]}),
    (MIX, {"flag": True}),
    (MIX, {"flag": False}),
    (MIX, {"zero": 0}),
    (MIX, {"empty": ""}),
    (("mix", "a", "deep"), {"color": {"$ne": "green"}}),
    (("keys",), {"a.b": 1}),
    (("keys",), {"a.b": 2}),
    (("keys",), {"a": {"b": 1}}),
    (("keys",), {"a": {"b": 2}}),
    (("keys",), {"it's": "q"}),
    (("keys",), {"it's": "it's"}),
    (("keys",), {'"dq"': 1}),
    (("keys",), {"": "empty key"}),
    (("keys",), {"[0]": 1}),
    (("keys",), {"a[0]": 1}),
    (("keys",), {"0": "zero"}),
    (("keys",), {"0": 0}),
    (("keys",), {"\\": 1}),
    (("keys",), {"%": 1}),
    (("keys",), {"%": "%"}),
    (("keys",), {"_": "_"}),
    (("keys",), {"é": 1}),
    (("keys",), {"a b": 1}),
    (("keys",), {"{a}": 1}),
    (("keys",), {"a": [{"b": 1}]}),
    (("keys",), {"a.b": {"$ne": 1}}),
    (NUM, {"n": {"$gt": 1}}),
    (NUM, {"n": {"$gte": 1}}),
    (NUM, {"n": {"$lt": 1}}),
    (NUM, {"n": {"$lte": 0}}),
    (NUM, {"n": {"$gt": 0, "$lt": 3}}),
    (NUM, {"n": {"$gte": 1.0, "$lte": 1}}),
    (NUM, {"n": {"$gt": -3.5}, "m": {"$lt": 5}}),
    (NUM, {"n": {"$eq": 1}}),
    (NUM, {"n": {"$ne": 1.0}}),
    (NUM, {"n": {"$gt": 1e14}}),
    (NUM, {"n": {"$gt": 2.4999}}),
    (NUM, {"n": {"$lt": -0.5}}),
    (NUM, {"n": {"$lte": -0.5}}),
    (NUM, {"m": {"$gt": 5}}),
    (NUM, {"m": {"$gte": 2**53}}),
    (NUM, {"m": {"$gt": 0}}),
    (NUM, {"m": {"$lte": 0}}),
    (NUM, {"n": {"$gt": 1}, "m": 0}),
    (NUM, {"n": 1, "m": {"$gte": 0}}),
    (BOOL, {"flag": {"$lt": True}}),
    (BOOL, {"flag": {"$lte": True}}),
    (BOOL, {"flag": {"$gt": False}}),
    (BOOL, {"flag": {"$gte": False}}),
    (BOOL, {"flag": {"$gt": True}}),
    (BOOL, {"flag": {"$lt": False}}),
    (BOOL, {"flag": {"$gte": True, "$lte": True}}),
    (BOOL, {"flag": {"$ne": True}}),
    # operators in a list's elements apply to the element, as at the top
    (BOOL, {"lst": [{"$gte": 2}, "b"]}),
    (BOOL, {"lst": [{"$lt": 3}, {"$ne": "b"}]}),
    (BOOL, {"lst": [{"$gt": 2}]}),
    (MIX, {"nested": [{"a": {"$gte": 1}}, {"b": [1, {"$lte": 2}]}]}),
]

#: Namespaces of items that only matter to the listings.
NAMESPACES: list[tuple[str, ...]] = [
    ("ns", "a"),
    ("ns", "a", "b"),
    ("ns", "a", "b", "c"),
    ("ns", "a", "b-c"),
    ("ns", "a-b"),
    ("ns", "a b"),
    ("ns", "a", "B"),
    ("ns", "a", "zzz"),
    ("ns", "A"),
    ("ns", "é"),
    ("ns", "e"),
    ("ns", "z"),
    ("ns", "a", "x", "c"),
    ("ns", "1", "c"),
    ("ns", "x", "memories"),
    ("ns", "y", "memories", "x"),
    ("ns", "%"),
    ("ns", "_"),
    ("ns", "%", "c"),
    ("ns", "*", "lit"),
    ("ns", "日本", "c"),
    ("ns", "😀"),
    ("ns", "\uffff"),
    ("ns", "a\x02"),
    ("ns", "a\t"),
    ("ns", "a", "\x7f"),
    ("ns", "a", " "),
    ("ns", "\U0001d538"),
    ("ns", "a", "b\n"),  # "$" of a regular expression also matches before a final newline
    ("ns", "c\n"),
    ("ns", "x\nc"),  # beyond the BMP: UTF-16 and UTF-8 orders differ
]

#: ``list_namespaces`` keyword arguments, each compared with InMemoryStore.
NAMESPACE_QUERIES: list[dict[str, Any]] = [
    {},
    {"prefix": ("ns",)},
    {"prefix": ("ns", "a")},
    {"prefix": ("ns", "a", "b")},
    {"prefix": ("ns", "*", "b")},
    {"prefix": ("ns", "a", "*")},
    {"prefix": ("ns", "*", "c")},
    {"prefix": ("*", "1")},
    {"suffix": ("memories",)},
    {"suffix": ("c",)},
    {"suffix": ("*", "c")},
    {"suffix": ("b", "*")},
    {"suffix": ("e",)},
    {"suffix": ("x",)},
    {"prefix": ("ns",), "suffix": ("c",)},
    {"prefix": ("ns", "*"), "suffix": ("memories", "*")},
    {"max_depth": 1},
    {"max_depth": 2},
    {"prefix": ("ns",), "max_depth": 3},
    {"prefix": ("ns", "a"), "max_depth": 2},
    {"suffix": ("c",), "max_depth": 2},
    {"max_depth": 10},
    {"limit": 5},
    {"limit": 5, "offset": 5},
    {"prefix": ("ns",), "limit": 4, "offset": 3},
    {"max_depth": 2, "limit": 3, "offset": 2},
    {"offset": 1000},
    {"prefix": ("ns", "%")},
    {"prefix": ("ns", "_")},
    {"prefix": ("ns", "*", "lit")},
    {"prefix": ("*", "*", "*", "*")},
    {"prefix": ("ns", "A")},
    {"prefix": ("ns", "é")},
    {"prefix": ("nope",)},
    {"prefix": ("mix",), "max_depth": 2},
    {"prefix": ("mix",)},
    {"prefix": ("ns", "a-b")},
    {"prefix": ("ns", "\uffff")},
    {"prefix": ("ns", "a", "b"), "max_depth": 1},
    {"prefix": ("ns", "*", "*"), "max_depth": 2},
    {"suffix": ("ns", "a", "b", "c", "d", "e")},
    {"suffix": ("a", "b", "c")},
    {"prefix": ("ns", "a"), "suffix": ("a",)},
    {"prefix": ("ns", "a", "b", "c"), "suffix": ("ns", "a", "b", "c")},
    {"prefix": ("ns", "%", "*")},
    {"suffix": ("%", "c")},
    {"suffix": ("c\n",)},
    {"prefix": ("ns", "*", "b\n")},
    {"max_depth": 0},
    {"prefix": ("nope",), "max_depth": 0},
]


def _feed(store: Any) -> None:
    for namespace, key, value in ITEMS:
        store.put(namespace, key, value)
    for namespace in NAMESPACES:
        store.put(namespace, "k", {"ns": list(namespace)})


@pytest.fixture(scope="module", params=BACKENDS)
def stores(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[SQLAlchemyStore, InMemoryStore]]:
    """The store on one backend and an InMemoryStore, both fed the same items."""
    args = new_saver_args(str(request.param), request, tmp_path_factory.mktemp("parity"))
    store = SQLAlchemyStore.from_conn_string(args.pop("conn_string"), **args)
    store.setup()
    reference = InMemoryStore()
    _feed(store)
    _feed(reference)
    yield store, reference
    store.close()


def _found(store: Any, prefix: tuple[str, ...], filter_: dict[str, Any]) -> set[Any]:
    return {(tuple(i.namespace), i.key) for i in store.search(prefix, filter=filter_, limit=1000)}


def _ids(cases: list[Any]) -> list[str]:
    """Readable test ids: the case's number and its JSON, ASCII, at most 48 characters."""
    out = []
    for n, case in enumerate(cases):
        case = case.values if hasattr(case, "marks") else case  # a pytest.param
        text = json.dumps(case, default=repr, separators=(",", ":")).replace(" ", "_")
        out.append(f"{n}:" + re.sub(r"[^A-Za-z0-9$_.,:\-\[\]{}*%]", "", text)[:48])
    return out


@pytest.mark.parametrize(("prefix", "filter_"), FILTERS, ids=_ids(FILTERS))
def test_filter_parity(
    stores: tuple[SQLAlchemyStore, InMemoryStore],
    prefix: tuple[str, ...],
    filter_: dict[str, Any],
) -> None:
    store, reference = stores
    expected = _found(reference, prefix, filter_)
    assert _found(store, prefix, filter_) == expected, (prefix, filter_)


@pytest.mark.parametrize("query", NAMESPACE_QUERIES, ids=_ids(NAMESPACE_QUERIES))
def test_namespace_parity(
    stores: tuple[SQLAlchemyStore, InMemoryStore], query: dict[str, Any]
) -> None:
    store, reference = stores
    query = {"limit": 1000, **query}
    expected = reference.list_namespaces(**query)
    assert expected == sorted(expected)
    assert store.list_namespaces(**query) == expected, query


def test_cases_are_meaningful() -> None:
    """The case lists are large enough and do not hit the reference's own limits."""
    assert len(FILTERS) >= 30 and len(NAMESPACE_QUERIES) >= 15
    reference = InMemoryStore()
    _feed(reference)
    cases = [case.values if hasattr(case, "marks") else case for case in FILTERS]
    nonempty = sum(bool(_found(reference, p, f)) for p, f in cases)
    assert nonempty >= len(FILTERS) * 2 // 3  # most filters match something
    assert sum(bool(reference.list_namespaces(**q)) for q in NAMESPACE_QUERIES) >= 30
    assert ("ns", "a", "b") < ("ns", "a", "b", "c") < ("ns", "a", "b-c")


# -- the documented differences ------------------------------------------------------


def test_true_is_not_one(stores: tuple[SQLAlchemyStore, InMemoryStore]) -> None:
    """JSON types, as every SQL database compares: True matches True only (InMemoryStore,
    Python's ``True == 1``, matches both)."""
    store, reference = stores
    assert _found(store, MIX, {"flag": True}) == {(("mix", "a"), "m1")}
    assert _found(store, MIX, {"n": True}) == set()
    assert _found(store, MIX, {"flag": 1}) == set()
    assert _found(store, MIX, {"flag": 0}) == set()
    assert _found(reference, MIX, {"flag": 1}) == {(("mix", "a"), "m1")}


def test_order_comparisons_need_same_types(
    stores: tuple[SQLAlchemyStore, InMemoryStore],
) -> None:
    """Numbers compare with numbers, strings with strings (code points); other pairs and
    missing keys do not match (InMemoryStore raises or reads "1" as 1.0)."""
    store, _ = stores
    n = {(("mix", "a"), "m1"), (("mix", "a"), "m2")}
    deep = {(("mix", "a", "deep"), "m7"), (("mix", "a", "deep"), "m8")}
    assert _found(store, MIX, {"n": {"$gte": 1, "$lte": 1}}) == n
    assert _found(store, MIX, {"n": {"$gt": 2}}) == {(("mix", "a", "deep"), "m7")}
    assert _found(store, MIX, {"n": {"$lt": "2"}}) == {(("mix", "a"), "m4")}
    assert _found(store, MIX, {"color": {"$gt": "red"}}) == {(("mix", "a"), "m4")}
    assert _found(store, MIX, {"color": {"$lt": "blue"}}) == {(("mix", "b"), "m3")}
    assert _found(store, MIX, {"color": {"$gte": "green", "$lt": "red"}}) == {
        (("mix", "a", "deep"), "m8")
    }
    assert _found(store, MIX, {"u": {"$gt": "caf"}}) == {
        (("mix", "a"), "m1"),
        (("mix", "a"), "m2"),
        (("mix", "a"), "m4"),
        (("mix", "b"), "m5"),
    }
    assert _found(store, MIX, {"flag": {"$gt": 0}}) == set()
    assert _found(store, MIX, {"tags": {"$gt": 0}}) == set()
    assert _found(store, MIX, {"missing": {"$lt": 1}}) == set()
    assert _found(store, MIX, {"nul": {"$gte": 0}}) == {(("mix", "b"), "m3")}
    assert deep <= _found(store, MIX, {"n": {"$gte": 0}})


def test_top_level_dollar_keys_are_refused(
    stores: tuple[SQLAlchemyStore, InMemoryStore],
) -> None:
    """No LangGraph store has logical operators: InMemoryStore (and PostgresStore) read
    ``$and`` as a field name and match nothing, SqliteStore refuses it; the store refuses
    every top-level ``$`` key with StoreRequestError, naming what it supports."""
    store, reference = stores
    assert _found(reference, ("keys",), {"$and": [{"a.b": 1}]}) == set()
    assert _found(reference, ("keys",), {"$.a": 1}) == {(("keys",), "k1")}
    for flt in ({"$and": [{"a.b": 1}]}, {"$or": [{"a.b": 1}]}, {"$.a": 1}, {"$x": 1}):
        with pytest.raises(StoreRequestError, match=r"logical operators .*\$gt"):
            _found(store, ("keys",), flt)


def test_unknown_operators_are_refused_anywhere(
    stores: tuple[SQLAlchemyStore, InMemoryStore],
) -> None:
    """An unknown operator raises wherever the predicate would apply it (InMemoryStore
    raises too when it reaches it), never read as some comparison."""
    store, reference = stores
    with pytest.raises(ValueError, match=r"\$evil"):
        _found(reference, BOOL, {"lst": [{"$evil": 1}]})
    for flt in (
        {"lst": [{"$evil": 1}]},
        {"lst": [1, [{"$evil": 1}]]},
        {"d": {"x": [{"y": {"$evil": 1}}]}},
        {"flag": {"$in": [True]}},
    ):
        with pytest.raises(StoreRequestError, match=r"unsupported filter operator '\$"):
            _found(store, ALL, flt)
    # an operator's bound is a plain value: a "$" key in it is data
    assert _found(store, BOOL, {"lst": {"$ne": [{"$evil": 1}]}}) == _found(
        reference, BOOL, {"lst": {"$ne": [{"$evil": 1}]}}
    )


# -- vector search ---------------------------------------------------------------------

WORDS = [
    "pizza",
    "pasta",
    "rain",
    "sunny",
    "cold",
    "dog",
    "cat",
    "python",
    "code",
    "love",
    "food",
    "today",
    "sql",
]
QUERIES = ["pizza", "cold rain", "dog cat", "python code sql", "love food today pizza", "zzz"]


def _vector_items() -> list[tuple[tuple[str, ...], str, dict[str, Any]]]:
    out = []
    for i in range(40):
        words = [WORDS[(i * 7 + j * 3) % len(WORDS)] for j in range(1 + i % 4)]
        value: dict[str, Any] = {"text": " ".join(words), "i": i}
        if i % 3 == 0:
            value["tags"] = [WORDS[i % len(WORDS)], WORDS[(i + 5) % len(WORDS)]]
        if i % 11 == 0:
            value = {"i": i}  # nothing to embed
        out.append((("vec", str(i % 2)), f"v{i:02}", value))
    return out


@pytest.fixture(scope="module", params=BACKENDS)
def vector_stores(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[SQLAlchemyStore, InMemoryStore]]:
    """The store on one backend and an InMemoryStore, with the same index config (the
    hashing embedding, fields ``text`` and ``tags[*]``) and the same items."""

    def index() -> Any:
        return {"dims": 16, "embed": HashEmbeddings(16), "fields": ["text", "tags[*]"]}

    args = new_saver_args(str(request.param), request, tmp_path_factory.mktemp("vectors"))
    store = SQLAlchemyStore.from_conn_string(args.pop("conn_string"), index=index(), **args)
    store.setup()
    reference = InMemoryStore(index=index())
    for s in (store, reference):
        for namespace, key, value in _vector_items():
            s.put(namespace, key, value)
    yield store, reference
    store.close()


def _ranking(results: list[Any]) -> list[tuple[float | None, str]]:
    """(score rounded to float32 precision, key), sorted: ties in any order."""
    return sorted(
        ((None if r.score is None else round(r.score, 4)), r.key)
        for r in results
        if r.score is not None
    ) + sorted((None, r.key) for r in results if r.score is None)  # type: ignore[misc]


@pytest.mark.parametrize("query", QUERIES)
def test_vector_search_parity(
    vector_stores: tuple[SQLAlchemyStore, InMemoryStore], query: str
) -> None:
    """The same scores (cosine, max over the embedded fields) for the same items, scored
    items first, best first; the unscored (nothing embedded) after them."""
    store, reference = vector_stores
    got = store.search(("vec",), query=query, limit=100)
    expected = reference.search(("vec",), query=query, limit=100)
    assert _ranking(got) == _ranking(expected)
    scores = [r.score for r in got if r.score is not None]
    assert scores == sorted(scores, reverse=True)
    assert all(r.score is None for r in got[len(scores) :])
    # the best 5, as scores (ties at the cut may pick different keys)
    top = [round(r.score, 4) for r in store.search(("vec",), query=query, limit=5)]
    assert top == [round(r.score, 4) for r in expected[:5]]
    # with a filter
    flt = {"i": {"$gte": 20}}
    got = store.search(("vec", "0"), query=query, filter=flt, limit=100)
    expected = reference.search(("vec", "0"), query=query, filter=flt, limit=100)
    assert _ranking(got) == _ranking(expected)
