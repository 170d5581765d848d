"""An item value's stored JSON text is ``orjson.dumps`` of its canonical form with
DEL and non-ASCII characters escaped as ``json.dumps`` escapes them (ASCII, as MariaDB's
``JSON_EQUALS`` filters need), byte for byte, whichever path wrote it, and a value
refused is refused with the same typed error and message as before.

``canonical_text`` checks a plain dict in one walk and writes it with orjson, and
sends everything else through ``canonical_json`` and then orjson: drawn values
(hypothesis) of every kind, JSON and not, must give what the general path gives. Then
the text a SQLite store holds after ``put`` and ``batch`` is compared with it.
"""

from __future__ import annotations

import enum
import json
import math
import re
import sqlite3
import uuid
from collections import OrderedDict
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langgraph.store.base import PutOp

from langgraph.checkpoint.sqlalchemy._codec.canonical import (
    MAX_DEPTH,
    canonical_json,
    canonical_text,
)
from langgraph.store.sqlalchemy import SQLAlchemyStore


class Colour(enum.Enum):
    RED = 1


class Level(enum.IntEnum):
    LOW = 1


class Tag(str, enum.Enum):
    A = "a"


class Text(str):
    pass


class Number(int):
    pass


class Real(float):
    pass


TEXT = st.text(
    st.one_of(
        st.characters(codec=None, exclude_categories=()),  # surrogates too
        st.sampled_from(["\x00", "\ud800", "\udfff", "🧵", "é", "\x7f", '"', "\\", "\n"]),
    ),
    max_size=12,
)
NUMBERS = st.one_of(
    st.integers(min_value=-(2**64), max_value=2**64),
    st.sampled_from([2**63 - 1, -(2**63), 2**63, -(2**63) - 1, 0, -1]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([1e16, 1e-5, 2.5e-7, -0.0, 1e300, 5e-324, 0.1]),
)
ODD = st.sampled_from(
    [
        Colour.RED,
        Level.LOW,
        Tag.A,
        Text("t"),
        Number(3),
        Real(1.5),
        uuid.UUID(int=7),
        b"bytes",
        {1, 2},
        Ellipsis,
        OrderedDict(a=1),
    ]
)
LEAVES = st.one_of(TEXT, NUMBERS, st.booleans(), st.none(), ODD)
KEYS = st.one_of(TEXT, TEXT, st.integers(), st.none(), st.sampled_from([Text("k"), Tag.A]))
VALUES = st.recursive(
    LEAVES,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(inner, max_size=3).map(tuple),
        st.dictionaries(KEYS, inner, max_size=4),
    ),
    max_leaves=12,
)
DICTS = st.dictionaries(KEYS, VALUES, max_size=5)
#: JSON made of the exact built-in types only: the values the walk takes (unless a
#: string holds NUL or a surrogate, or a number is out of range).
PLAIN = st.dictionaries(
    TEXT,
    st.recursive(
        st.one_of(TEXT, NUMBERS, st.booleans(), st.none()),
        lambda inner: st.one_of(
            st.lists(inner, max_size=4), st.dictionaries(TEXT, inner, max_size=4)
        ),
        max_leaves=16,
    ),
    max_size=6,
)


def _general(value: Any) -> tuple[Any, str] | tuple[type[BaseException], str]:
    """What the general path gives: ``(canonical copy, orjson text)``, or
    ``(error type, message)``."""
    try:
        checked = canonical_json(value, depth=MAX_DEPTH)
    except (TypeError, ValueError) as e:
        return type(e), str(e)
    # orjson of the copy as plain built-in JSON (json.dumps writes a subclass of int or
    # float, which canonical_json keeps, as the built-in value)
    return checked, _orjson(checked)


def _orjson(checked: Any) -> str:
    """orjson's text of the canonical copy, each DEL or non-ASCII character as
    ``json.dumps`` writes it alone (``"\\u00e9"``, an astral one as two escapes)."""
    text = orjson.dumps(json.loads(json.dumps(checked))).decode()
    return re.sub(r"[^\x00-\x7e]", lambda m: json.dumps(m.group())[1:-1], text)


def _same(a: Any, b: Any) -> bool:
    """Equal, types included, at every level (``1 == 1.0 == True`` are told apart)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return bool(a == b)


def _check(value: Any) -> None:
    expected = _general(value)
    try:
        got = canonical_text(value, depth=MAX_DEPTH)
    except (TypeError, ValueError) as e:
        assert (type(e), str(e)) == expected
        return
    assert not isinstance(expected[0], type), f"{value!r} accepted, refused before: {expected}"
    assert got[1] == expected[1]
    # The value returned is the canonical copy, or the value itself when it was already
    # canonical: equal to the copy with the same types at every level.
    assert _same(got[0], expected[0])


@settings(max_examples=600, deadline=None)
@given(DICTS)
def test_drawn_dicts_give_the_general_paths_text_or_error(value: dict[Any, Any]) -> None:
    """Any drawn dict: the same text as ``orjson.dumps(canonical_json(value))``, or the same
    typed error with the same message."""
    _check(value)


@settings(max_examples=600, deadline=None)
@given(PLAIN)
def test_drawn_json_dicts_give_the_general_paths_text_or_error(value: dict[str, Any]) -> None:
    """Drawn JSON dicts, mostly of the kind the one-walk path writes."""
    _check(value)


@settings(max_examples=200, deadline=None)
@given(VALUES)
def test_drawn_values_of_any_kind_give_the_general_paths_result(value: Any) -> None:
    """Not only dicts: lists, tuples, scalars and objects that are not JSON."""
    _check(value)


def _nested(levels: int) -> dict[str, Any]:
    value: dict[str, Any] = {"leaf": 1}
    for _ in range(levels - 1):
        value = {"d": value}
    return value


def _lists(levels: int) -> list[Any]:
    value: list[Any] = [1]
    for _ in range(levels - 1):
        value = [value]
    return value


@pytest.mark.parametrize(
    "value",
    [
        {"a": 1, "b": [1, 2.5, None, True, "x"], "c": {}},
        {"text": "café 🧵 \x7f \u2028", "n": 2**63 - 1, "m": -(2**63)},
        {"big": 2**63},
        {"small": -(2**63) - 1},
        {"nan": math.nan},
        {"inf": [math.inf]},
        {"nul": "a\x00b", "k\x00": 1},
        {"lone": "\ud800"},
        {"\udfff": 1},
        {"pair": "\ud83e\uddf5"},  # an astral character written as two code points
        {"backslash": "\\ud800 is six characters"},
        {1: "int key"},
        {None: "none key"},
        {"tuple": (1, (2, 3))},
        {"enum": Colour.RED},
        {"intenum": Level.LOW, "strenum": Tag.A},
        {"subclass": Text("t"), "n": Number(2), "f": Real(0.5)},
        {"uuid": uuid.UUID(int=1)},
        {"ordered": OrderedDict(a=1)},
        OrderedDict(a=1),
        _nested(MAX_DEPTH),
        _nested(MAX_DEPTH + 1),
        {"lists": _lists(MAX_DEPTH - 1)},
        {"lists": _lists(MAX_DEPTH)},
        [1, 2],
        "text",
    ],
    ids=lambda v: repr(v)[:40],
)
def test_edge_values_give_the_general_paths_text_or_error(value: Any) -> None:
    """Each rule at its edge: 64-bit bounds, NaN and infinities, NUL and surrogates
    (lone, paired, or only spelt out), non-string keys, tuples, subclasses and enums,
    other mappings, the depth limit."""
    _check(value)


def test_a_cycle_is_refused_as_too_deep() -> None:
    value: dict[str, Any] = {}
    value["self"] = value
    _check(value)


def test_stored_text_on_sqlite_is_orjson_of_the_canonical_value(tmp_path: Any) -> None:
    """What a SQLite store holds for values put alone and in a batch is
    ``orjson.dumps(canonical_json(value))``, byte for byte, and reads back as
    ``json.loads`` reads it."""
    values: list[dict[str, Any]] = [
        {"a": 1, "b": [1, 2.5, None, True], "c": {"d": "é"}},
        {"nul": "a\x00b", "t": (1, 2), "f": 1e-05, "big": 2**62},
        {"emoji": "🧵", "sub": Text("s"), "e": Level.LOW},
        {},
    ]
    path = tmp_path / "store.sqlite"
    with SQLAlchemyStore.from_conn_string(f"sqlite:///{path}") as store:
        store.setup()
        for i, value in enumerate(values):
            store.put(("alone",), f"k{i}", value)
        store.batch([PutOp(("batch",), f"k{i}", v) for i, v in enumerate(values)])
    conn = sqlite3.connect(path)
    try:
        rows = dict(
            ((ns, key), text)
            for ns, key, text in conn.execute("SELECT namespace, key, value FROM lgsa_store_items")
        )
    finally:
        conn.close()
    for i, value in enumerate(values):
        expected = _orjson(canonical_json(value))
        assert json.loads(expected) == json.loads(json.dumps(canonical_json(value)))
        assert rows[("alone", f"k{i}")] == expected
        assert rows[("batch", f"k{i}")] == expected
