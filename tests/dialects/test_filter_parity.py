"""The same metadata filters over the same checkpoints give the same rows on every backend,
and the rows a plain-Python reading of the documented semantics gives."""

from __future__ import annotations

from typing import Any

import pytest
from langgraph.checkpoint.base import empty_checkpoint

from langgraph.checkpoint.sqlalchemy import SQLAlchemySaver

from ..provision import DIALECT_BACKENDS as BACKENDS
from ..provision import new_saver_args

METADATA: list[dict[str, Any]] = [
    {
        "source": "loop",
        "step": 5,
        "flag": True,
        "n": 1,
        "tags": ["a", "b"],
        "d": {"x": 1, "y": [1, 2]},
    },
    {
        "source": "loop",
        "step": 6,
        "flag": 1,
        "n": 1.0,
        "tags": ["b", "a"],
        "d": {"y": [1, 2], "x": 1.0},
    },
    {"source": "input", "step": -1, "flag": False, "n": None, "tags": [], "d": {}},
    {
        "source": "update",
        "step": 5,
        "n": "1",
        "note": "quote ' \" ) -- $ é 😀",
        "d": {"x": {"deep": None}},
    },
    {"source": "loop", "step": 5.0, "flag": None, "empty": "", "big": 2**63 - 1},
]

FILTERS: list[dict[str, Any]] = [
    {"source": "loop"},
    {"source": "loop", "step": 5},
    {"step": 5},
    {"step": 5.0},
    {"flag": True},
    {"flag": 1},
    {"flag": False},
    {"flag": None},
    {"n": None},
    {"n": 1},
    {"n": "1"},
    {"tags": ["a", "b"]},
    {"tags": ["b", "a"]},
    {"tags": []},
    {"d": {"x": 1, "y": [1, 2]}},
    {"d": {"y": [1, 2], "x": 1}},
    {"d": {}},
    {"d": {"x": {"deep": None}}},
    {"note": "quote ' \" ) -- $ é 😀"},
    {"empty": ""},
    {"big": 2**63 - 1},
    {"missing": None},
    {"source": "nope"},
]


def reference(filter_: dict[str, Any]) -> list[int]:
    """The documented semantics in Python: JSON equality per top-level key, where bools
    are not numbers, 1 == 1.0, dict key order is free and None is an explicit null."""

    def same(a: Any, b: Any) -> bool:
        if isinstance(a, bool) or isinstance(b, bool):
            return type(a) is type(b) and a == b
        if isinstance(a, (int, float)) and isinstance(b, (int, float)):
            return a == b
        if isinstance(a, dict) and isinstance(b, dict):
            return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
        if isinstance(a, list) and isinstance(b, list):
            return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
        return type(a) is type(b) and a == b

    return [
        i
        for i, md in enumerate(METADATA)
        if all(k in md and same(md[k], v) for k, v in filter_.items())
    ]


async def test_filters_give_the_same_rows_on_every_backend(
    request: pytest.FixtureRequest, tmp_path: Any
) -> None:
    rows: dict[str, list[list[int]]] = {}
    for backend in BACKENDS:
        saver = SQLAlchemySaver.from_conn_string(
            **new_saver_args(backend, request, tmp_path / backend)
        )
        (tmp_path / backend).mkdir()
        try:
            saver.setup()
            for i, md in enumerate(METADATA):
                saver.put({"configurable": {"thread_id": f"t{i}"}}, empty_checkpoint(), md, {})
            rows[backend] = [
                sorted(
                    int(t.config["configurable"]["thread_id"][1:])
                    for t in saver.list(None, filter=f)
                )
                for f in FILTERS
            ]
        finally:
            await saver.aclose()
    expected = [reference(f) for f in FILTERS]
    for backend, got in rows.items():
        wrong = [(f, g, e) for f, g, e in zip(FILTERS, got, expected, strict=True) if g != e]
        assert wrong == [], f"{backend}: (filter, got, expected) {wrong}"
