"""Search filters decided in SQL select exactly what the Python predicate keeps, on every
backend, for every operator over a generated set of values; and a range filter reads
only its matches from the database.

The predicate (:meth:`langgraph.store.sqlalchemy.filters.Filter.matches`) is the one
meaning of a filter. The store's rows are read here through its SQL conditions alone
(:meth:`Filter.conditions`, no Python check): where the filter is exact
(:attr:`Filter.exact`) they must select the predicate's matches, elsewhere a superset.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from langgraph.store.base import PutOp
from sqlalchemy import select

from langgraph.store.sqlalchemy import SQLAlchemyStore, _reads, _scan
from langgraph.store.sqlalchemy.filters import compile_filter
from langgraph.store.sqlalchemy.tables import items

#: Values a field holds (and "missing": no field).
SCALARS: list[Any] = [
    0,
    1,
    1.0,
    -1,
    2.5,
    -2.5,
    10,
    1e-300,
    2**53 + 1,
    -(2**63),
    2**63 - 1,
    # Not 1.5e308: PostgreSQL reads a float of many digits back as an integer
    # (jsonb's numeric prints 1.5e308 in full), which the predicate then compares.
    1.5e16,
    "",
    "a",
    "a ",
    "b",
    "B",
    "é",
    "日本",
    "😀",
    "10",
    "1",
    True,
    False,
    None,
]
VALUES: list[Any] = [
    *SCALARS,
    [],
    [1, 2],
    [1.0, 2],
    [2, 1],
    ["a", None],
    [True],
    [1],
    [[1, "x"]],
    [{"x": 1}],
    {},
    {"x": 1},
    {"x": 1.0, "y": "b"},
    {"x": "1"},
    {"x": None},
    {"x": {"z": [1, 2]}},
    {"y": True},
]
BOUNDS: list[Any] = [
    0,
    1,
    1.0,
    2.5,
    -1,
    10,
    2**53 + 1,
    2**63 - 1,
    1.5e308,
    float("inf"),
    -float("inf"),
    10**30,
    "",
    "a",
    "a ",
    "b",
    "é",
    "😀",
    "1",
    True,
    False,
    None,
    [1, 2],
    {"x": 1},
]
OPS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")
SKIP_EQ = (float("inf"), -float("inf"), 10**30)  # refused outside order operators


def _filters() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for op, bound in itertools.product(OPS, BOUNDS):
        if op in ("$eq", "$ne") and any(bound == s and type(bound) is type(s) for s in SKIP_EQ):
            continue
        out.append({"f": {op: bound}})
    out += [{"f": v} for v in VALUES]
    out += [
        {"f": {"$gt": 0, "$lte": 10}},
        {"f": {"$gte": "a", "$lt": "b"}},
        {"f": {"x": {"$gt": 0}}},
        {"f": {"x": {"$ne": 1}}},
        {"f": {"x": {"$eq": None}}},
        {"f": {"x": 1, "y": {"$gte": "a"}}},
        {"f": {"x": {"z": [1, 2]}}},
        {"f": {"x": {}}},
        {"f": [{"x": {"$gt": 0}}]},
        {"f": {"$eq": {"x": 1.0}}},
        {"f": {"$ne": [1, 2]}},
        {"f": 1, "g": {"$lt": "b"}},
        {"g": {"$ne": None}},
    ]
    return out


@pytest.fixture
async def filled(store: SQLAlchemyStore) -> SQLAlchemyStore:
    """One item a value (and one without ``f``), ``g`` cycling through strings."""
    rows = [(str(i), {"f": v, "g": "abc"[i % 3]}) for i, v in enumerate(VALUES)]
    rows.append(("missing", {"g": "z"}))
    for key, value in rows:
        await store.aput(("t",), key, value)
    return store


def _sql_keys(store: SQLAlchemyStore, flt: Any) -> set[str]:
    qb = store._qb
    with store.engine.connect() as conn:
        if store.schema:
            conn = conn.execution_options(schema_translate_map={None: store.schema})
        conds = flt.conditions(qb, items.c.value, conn.dialect)
        stmt = select(items.c.key, items.c.value).where(items.c.namespace == "t", *conds)
        return {str(r[0]) for r in conn.execute(stmt)}


async def test_sql_conditions_select_what_the_predicate_keeps(filled: SQLAlchemyStore) -> None:
    store = filled
    everything = {i.key: i.value for i in await store.asearch(("t",), limit=1000)}
    assert len(everything) == len(VALUES) + 1
    wrong: list[Any] = []
    for spec in _filters():
        flt = compile_filter(spec)
        want = {k for k, v in everything.items() if flt.matches(v)}
        got = _sql_keys(store, flt)
        if not got >= want or (flt.exact and got != want):
            wrong.append((spec, flt.exact, sorted(want - got), sorted(got - want)))
        found = {i.key for i in await store.asearch(("t",), filter=spec, limit=1000)}
        if found != want:
            wrong.append(("search", spec, sorted(want - found), sorted(found - want)))
    assert not wrong, wrong[:10]


async def test_a_cached_statement_binds_an_integer_as_an_integer_after_a_float(
    store: SQLAlchemyStore,
) -> None:
    """Statements are cached by the filter's shape: a float bound first must not make
    a later integer bound of the same key a float (2**53 + 1 would become 2**53)."""
    big = 2**53 + 1
    await store.aput(("c",), "big", {"f": big})
    await store.aput(("c",), "half", {"f": 1.5})
    for spec in ({"f": 1.5}, {"f": big}, {"f": {"$gte": 1.5}}, {"f": {"$lte": 2**53 - 1}}):
        await store.asearch(("c",), filter=spec)
    assert [i.key for i in await store.asearch(("c",), filter={"f": big})] == ["big"]
    assert [i.key for i in store.search(("c",), filter={"f": big})] == ["big"]
    got = await store.asearch(("c",), filter={"f": {"$gte": 3}})
    assert [i.key for i in got] == ["big"]


def test_every_operator_is_exact_for_ordinary_bounds() -> None:
    for op in OPS:
        for bound in (1, 2.5, "a", True, None):
            assert compile_filter({"f": {op: bound}}).exact, (op, bound)
    assert compile_filter({"f": {"x": {"$gt": 1}, "y": None}, "g": {"$ne": "a"}}).exact
    assert not compile_filter({"f": [1, "a"]}).exact  # a list compared whole: Python
    assert not compile_filter({"f": {"$eq": {"x": 1}}}).exact
    assert not compile_filter({"f": {"$gt": 2**60}}).exact  # beyond 2**53: Python decides


async def test_a_range_filter_reads_only_its_matches(
    store: SQLAlchemyStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    for start in range(0, 1200, 100):
        store.batch(
            [
                PutOp(("big",), f"k{i}", {"score": i / 1200, "other": "x"})
                for i in range(start, start + 100)
            ]
        )
    read: list[Any] = []
    for module in (_reads, _scan):
        real = module.readable

        def counted(row: Any, score: float | None = None, real: Any = real) -> Any:
            read.append(row)
            return real(row, score)

        monkeypatch.setattr(module, "readable", counted)
    want = {f"k{i}" for i in range(1200) if i / 1200 > 0.99}
    for spec in ({"$gt": 0.99}, {"$gt": 0.99, "$ne": 2}):
        found = await store.asearch(("big",), filter={"score": spec}, limit=100)
        assert {i.key for i in found} == want
        # Every row the database returned was a match: it evaluated the comparison.
        assert len(read) == len(want)
        read.clear()
