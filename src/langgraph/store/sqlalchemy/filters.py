"""Search filters of the store: their one meaning, checked in Python and narrowed in SQL.

``search(prefix, filter={...})`` keeps the items whose value matches every key of the
filter, with ``InMemoryStore``'s semantics (LangGraph's reference store), the same on every
dialect:

* a key names a top-level key of the item's value;
* a plain value means equality: a scalar equals as JSON (``1`` equals ``1.0``; ``True``
  does not equal ``1``, the one difference from ``InMemoryStore``, where Python's
  ``True == 1``), a list equals element by element, a dict matches when each of its keys
  matches the value's (recursively; the value's other keys are free); ``None`` matches an
  explicit ``null`` and a missing key;
* a dict of operators (``$eq``, ``$ne``, ``$gt``, ``$gte``, ``$lt``, ``$lte``) applies
  each, at the top, in a nested dict or in a list's element (as ``InMemoryStore``):
  ``$eq``/``$ne`` compare whole JSON values, a missing key reading as ``None``
  (``$ne`` matches it unless the bound is ``None``);
  the order comparisons compare numbers with numbers, strings with strings (by code
  point) and booleans with booleans (``False < True``), and no other pair matches
  (``InMemoryStore`` raises, or reads ``"5"`` as 5 and ``True`` as 1); their bound may
  also be ``float("inf")``, ``float("-inf")`` or an integer beyond 64 bits, which no
  stored number reaches (``{"$lt": float("inf")}`` matches every number), as in
  ``InMemoryStore`` and ``SqliteStore``. Elsewhere such a number, and NaN anywhere, is a
  ``ValueError``: NaN has no agreed meaning (``InMemoryStore``'s ``{"$ne": NaN}``
  matches every item, ``SqliteStore``'s none).

Refused with :class:`~langgraph.checkpoint.sqlalchemy.errors.StoreRequestError` before
any statement runs: a top-level key starting with ``$`` (``$and``, ``$or``: no LangGraph
store has logical operators; ``InMemoryStore`` and ``PostgresStore`` read such a key as a
field name and match nothing, ``SqliteStore`` refuses it), an operator outside
:data:`OPERATORS` anywhere (never applied as some comparison), operators mixed with
plain keys, more than :data:`MAX_FILTER_KEYS` keys, and a filter whose JSON text is
longer than :data:`MAX_FILTER_BYTES` characters.

:func:`compile_filter` checks a filter before any statement runs and returns the
predicate (:meth:`Filter.matches`, the definition above) and the SQL conditions that
select the matches in the database (:meth:`Filter.conditions`): every operator, nested
key and ``None`` written with the dialect's JSON reads and type tests (the
``json_*`` methods of :class:`.QueryBuilder`), with bound parameters only. Where SQL
cannot decide exactly, the conditions select a superset and the predicate decides:
a key SQLite's JSON paths cannot name (non-printable or non-ASCII, ``"``, ``\\``), a
list or a dict compared whole (SQL checks its JSON type: SQLite's comparison of two
JSON trees is quadratic, 20,000 elements took minutes), and an order bound of magnitude
2**53 or more (the databases round such numbers differently). When every key is exact
(:attr:`Filter.exact`) the database also pages the results; else the candidates are
read a page at a time and checked.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from langgraph.checkpoint.sqlalchemy._codec.canonical import (
    MAX_DEPTH,
    MAX_FILTER_KEYS,
    canonical_json,
    json_string,
)
from langgraph.checkpoint.sqlalchemy.dialects import Binder, QueryBuilder
from langgraph.checkpoint.sqlalchemy.dialects._json_filters import EXACT_NUMBERS, addressable
from langgraph.checkpoint.sqlalchemy.errors import StoreRequestError
from sqlalchemy import ColumnElement, and_, false, func, literal, not_, true
from sqlalchemy.engine import Dialect

__all__ = [
    "MAX_FILTER_BYTES",
    "MAX_FILTER_KEYS",
    "OPERATORS",
    "Filter",
    "compile_filter",
    "json_equal",
]

#: Longest search filter, in characters of its JSON text (keys included): its equalities
#: are bound parameters of the statement (MariaDB's default ``max_allowed_packet`` is 16
#: MiB, 4 bytes a character at most), and the predicate walks the rest for every
#: candidate.
MAX_FILTER_BYTES = 1024 * 1024

#: The comparison operators LangGraph's stores document.
OPERATORS = frozenset({"$eq", "$ne", "$gt", "$gte", "$lt", "$lte"})
_ORDER = {"$gt", "$gte", "$lt", "$lte"}
_MISSING = object()


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def json_equal(a: Any, b: Any) -> bool:
    """Whether two JSON values are equal: numbers as numbers, booleans only to booleans,
    lists element by element, dicts by their keys and values."""
    if _is_number(a) and _is_number(b):
        return bool(a == b)
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=False))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if a is None or b is None:
        return a is b
    return type(a) is type(b) and bool(a == b)


def _ordered(value: Any, operator: str, bound: Any) -> bool:
    if _is_number(value) and _is_number(bound):
        pass
    elif isinstance(value, bool) and isinstance(bound, bool):
        pass  # False < True, as InMemoryStore's float(False) < float(True)
    elif not (isinstance(value, str) and isinstance(bound, str)):
        return False
    if operator == "$gt":
        return bool(value > bound)
    if operator == "$gte":
        return bool(value >= bound)
    if operator == "$lt":
        return bool(value < bound)
    return bool(value <= bound)


def _matches(value: Any, wanted: Any) -> bool:
    """Whether a stored value (``_MISSING`` when the key is absent) matches a filter
    value (see the module docstring)."""
    if isinstance(wanted, dict) and wanted and all(k.startswith("$") for k in wanted):
        return all(_operator(value, op, bound) for op, bound in wanted.items())
    if isinstance(wanted, dict):
        if not isinstance(value, dict):
            return False
        return all(_matches(value.get(k, _MISSING), v) for k, v in wanted.items())
    if isinstance(wanted, list):
        return (
            isinstance(value, list)
            and len(value) == len(wanted)
            and all(_matches(v, w) for v, w in zip(value, wanted, strict=False))
        )
    if wanted is None:
        return value is None or value is _MISSING
    return value is not _MISSING and json_equal(value, wanted)


def _operator(value: Any, operator: str, bound: Any) -> bool:
    if operator in ("$eq", "$ne"):
        # A missing key reads as None, as InMemoryStore's ``value.get(key)``: {"$eq": None}
        # matches it, {"$ne": None} does not, {"$ne": x} does.
        same = json_equal(None if value is _MISSING else value, bound)
        return same if operator == "$eq" else not same
    if operator not in _ORDER:  # compile_filter refused it; never some comparison
        raise StoreRequestError(f"unsupported filter operator {operator!r}")
    return value is not _MISSING and _ordered(value, operator, bound)


@dataclass(frozen=True)
class Filter:
    """A checked search filter.

    Attributes:
        items: The filter, each value made canonical JSON.
        exact: Whether :meth:`conditions` select exactly the matches on every dialect
            (the database may then apply ``limit``/``offset``); else they select a
            superset and :meth:`matches` decides.
        shape: What the SQL of :meth:`conditions` depends on besides the values' binds
            (keys, operators, kinds of values).
    """

    items: tuple[tuple[str, Any], ...]
    exact: bool
    shape: tuple[Any, ...] = ()

    def conditions(
        self, qb: QueryBuilder, column: Any, dialect: Dialect, bind: Binder = literal
    ) -> list[ColumnElement[bool]]:
        """SQL conditions every match satisfies, for the connection's ``dialect`` (a
        ``mysql://`` URL may reach MariaDB, which compares JSON otherwise): every
        operator, nested key and list the dialect's JSON functions can decide
        (:class:`.QueryBuilder`), bound parameters only, those of the values made by
        ``bind`` (in the same order for every filter of the same :attr:`shape`)."""
        out: list[ColumnElement[bool]] = []
        for key, value in self.items:
            out.extend(_SQL(qb, column, dialect, bind).item(key, value))
        return out

    def uses_index(self, indexed: frozenset[str]) -> bool:
        """Whether a key of the filter is one of the ``indexed`` fields (its expression
        index may serve the search better than a walk newest first)."""
        return any(k in indexed for k, _ in self.items)

    def matches(self, value: Mapping[str, Any]) -> bool:
        """Whether an item's value matches the filter."""
        return all(_matches(value.get(k, _MISSING), v) for k, v in self.items)


_ALL_KINDS = frozenset({"object", "array", "string", "number", "true", "false", "null", "missing"})


def _is_operators(value: Any) -> bool:
    return isinstance(value, dict) and bool(value) and all(k.startswith("$") for k in value)


def _small(bound: Any) -> bool:
    """A finite number an order comparison decides exactly in SQL (see
    :data:`..dialects._json_filters.EXACT_NUMBERS`)."""
    return _is_number(bound) and not _open_bound(bound) and abs(bound) < EXACT_NUMBERS


def _order_kind(op: str, bound: Any) -> tuple[str, bool]:
    """How an order comparison compiles: ``("none", True)`` (matches nothing), ``("all",
    True)`` (every number), ``("bools", True)``, ``("cmp", True)`` (a comparison in SQL),
    ``("numbers", False)`` (any number: Python decides)."""
    if isinstance(bound, bool):
        return "bools", True
    if isinstance(bound, str):
        return "cmp", True
    if _is_number(bound):
        if isinstance(bound, float) and math.isinf(bound):
            up = op in ("$lt", "$lte")
            return ("all" if up == (bound > 0) else "none"), True
        return ("cmp", True) if _small(bound) else ("numbers", False)
    return "none", True  # None, a list or a dict: no order


def _exact(value: Any, top: bool) -> bool:
    """Whether the SQL of a filter value decides exactly (see :class:`_SQL`)."""
    if _is_operators(value):
        return all(
            _order_kind(op, b)[1] if op in _ORDER else not isinstance(b, (dict, list))
            for op, b in value.items()
        )
    if isinstance(value, dict):
        return all(addressable(k) and _exact(v, False) for k, v in value.items())
    return not isinstance(value, list)


def _skeleton(value: Any) -> Any:
    """The part of a filter value its SQL depends on (:attr:`Filter.shape`)."""
    if _is_operators(value):
        return tuple((op, _bound_skeleton(op, b)) for op, b in value.items())
    if isinstance(value, dict):
        return ("{", tuple((k, _skeleton(v)) for k, v in value.items()))
    if isinstance(value, list):
        return "["
    if value is None:
        return "None"
    if isinstance(value, (bool, str)):
        return "b" if isinstance(value, bool) else "s"
    # int and float apart: a bound's SQL type is taken from the first value bound into
    # the cached statement, and 2**53 + 1 bound as a float is 2**53.
    return "i" if isinstance(value, int) else "f"


def _bound_skeleton(op: str, bound: Any) -> Any:
    if op in _ORDER:
        kind = _order_kind(op, bound)[0]
        if kind == "cmp":
            return kind, type(bound).__name__  # str, int or float: as in _skeleton
        return (kind, bound) if kind == "bools" else kind
    return _skeleton(bound) if not isinstance(bound, dict) else "{="


class _SQL:
    """The conditions of one filter key: :func:`_matches` written with the dialect's
    JSON reads (:class:`.QueryBuilder`'s ``json_*`` methods). Where SQL cannot decide
    (a key a JSON path cannot name, a list or a dict compared whole, a number bound
    beyond ``EXACT_NUMBERS``), it narrows to a superset and :func:`_exact` says so."""

    def __init__(self, qb: QueryBuilder, column: Any, dialect: Dialect, bind: Binder) -> None:
        self.qb, self.column, self.dialect, self.bind = qb, column, dialect, bind

    def item(self, key: str, value: Any) -> list[ColumnElement[bool]]:
        if not addressable(key):
            # SQLite's paths cannot name it: a scalar equality through json_each, else
            # no narrowing (Python decides).
            scalar = _scalar_equality(value)
            if scalar is _MISSING:
                return []
            return [self.qb.metadata_equals(self.column, key, scalar, self.dialect, self.bind)]
        qb, path = self.qb, (key,)
        out = self._value(path, value)
        guarded = qb.json_guard(self.column, out)
        extra: list[Any] = []
        if key in qb.indexed_fields and guarded is not out:
            # The guard (SQLite's CASE) hides the comparison from the planner: the bare
            # comparisons an expression index serves go beside it (unguarded: an indexed
            # document is valid JSON, or its index entry could not have been made).
            scalar = _scalar_equality(value)
            if scalar is not _MISSING:
                extra.append(
                    qb.json_scalar_equals(self.column, path, scalar, self.bind, self.dialect)
                )
            for op, bound in value.items() if _is_operators(value) else ():
                if op in _ORDER and _order_kind(op, bound)[0] == "cmp":
                    extra.extend(qb.json_order(self.column, path, op, bound, self.bind))
        return [*extra, guarded]

    def _kinds(self, path: tuple[str, ...], kinds: set[str]) -> Any:
        if not kinds:
            return false()
        if kinds >= _ALL_KINDS:
            return true()
        return self.qb.json_kind_in(self.column, path, frozenset(kinds))

    def _value(self, path: tuple[str, ...], wanted: Any) -> Any:
        qb, column = self.qb, self.column
        if _is_operators(wanted):
            return and_(true(), *(self._operator(path, op, b) for op, b in wanted.items()))
        if isinstance(wanted, dict):
            parts = [self._kinds(path, {"object"})]
            for k, v in wanted.items():
                if addressable(k):
                    parts.append(self._value((*path, k), v))
            return and_(*parts)
        if isinstance(wanted, list):
            return self._kinds(path, {"array"})
        if wanted is None:
            return self._kinds(path, {"null", "missing"})
        return qb.json_scalar_equals(column, path, wanted, self.bind, self.dialect)

    def _equal(self, path: tuple[str, ...], bound: Any) -> Any:
        """Whether the value at ``path`` (a missing one read as None) equals ``bound``
        as JSON (:func:`json_equal`)."""
        if bound is None:
            return self._kinds(path, {"null", "missing"})
        if isinstance(bound, (dict, list)):
            return self._kinds(path, {"object" if isinstance(bound, dict) else "array"})
        return self.qb.json_scalar_equals(self.column, path, bound, self.bind, self.dialect)

    def _operator(self, path: tuple[str, ...], op: str, bound: Any) -> Any:
        if op == "$eq":
            return self._equal(path, bound)
        if op == "$ne" and isinstance(bound, (dict, list)):
            return true()  # a container compared whole: Python decides
        if op == "$ne":
            return not_(func.coalesce(self._equal(path, bound), false()))
        kind, _ = _order_kind(op, bound)
        if kind == "none":
            return false()
        if kind in ("all", "numbers"):
            return self._kinds(path, {"number"})
        if kind == "bools":
            return self._kinds(
                path, {str(b).lower() for b in (False, True) if _ordered(b, op, bound)}
            )
        return and_(*self.qb.json_order(self.column, path, op, bound, self.bind))


def compile_filter(spec: Mapping[str, Any] | None) -> Filter:
    """Check ``spec`` (a ``search`` filter) and compile it.

    Args:
        spec: The filter, or None.

    Returns:
        The :class:`Filter`.

    Raises:
        TypeError: ``spec`` is not a dict, a key is not a string, or a value is not JSON.
        StoreRequestError: A top-level key starting with ``$``, an operator other than
            those of :data:`OPERATORS`, an operator mixed with plain keys, more than
            :data:`MAX_FILTER_KEYS` keys, or more than :data:`MAX_FILTER_BYTES` of JSON.
        ValueError: NaN, an infinite float or an integer beyond 64 bits other than an
            order operator's bound, or nesting deeper than the JSON documents the store
            keeps.
    """
    if spec is None:
        return Filter((), True)
    if not isinstance(spec, Mapping):
        raise TypeError(f"a search filter is a dict, not {type(spec).__name__}")
    if len(spec) > MAX_FILTER_KEYS:
        raise StoreRequestError(
            f"a search filter has {len(spec)} keys; the store takes at most "
            f"{MAX_FILTER_KEYS} (SQLite refuses a query with about 1,000 conditions). "
            "Filter on fewer keys and check the others in your code."
        )
    items: list[tuple[str, Any]] = []
    exact = True
    size = 0
    for key, raw in spec.items():
        if not isinstance(key, str):
            raise TypeError(f"filter keys must be strings, got {type(key).__name__}")
        if key.startswith("$"):
            raise StoreRequestError(
                f"a search filter's top-level keys are field names, and {key[:40]!r} "
                "starts with '$': logical operators ($and, $or, $not) are not supported, "
                "as in LangGraph's other stores. Give several keys (all must match), run "
                "one search per alternative for an OR, and put comparison operators under "
                f"a field: {{'field': {{'$gt': 1}}}} ({', '.join(sorted(OPERATORS))})."
            )
        value = _filter_json(raw, MAX_DEPTH - 1)
        size += len(key) + len(json.dumps(value, ensure_ascii=False))
        if size > MAX_FILTER_BYTES:
            raise StoreRequestError(
                f"a search filter of more than {MAX_FILTER_BYTES:,} characters of JSON; "
                f"the store takes at most {MAX_FILTER_BYTES:,}. Filter on a short field "
                "(an id or a digest of the long value) instead."
            )
        _check_operators(key, value)
        items.append((key, value))
        if addressable(key):
            exact = exact and _exact(value, True)
        else:
            exact = exact and _scalar_equality(value) is not _MISSING
    shape = tuple((k, addressable(k), _skeleton(v)) for k, v in items)
    return Filter(tuple(items), exact, shape)


_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def _open_bound(value: Any) -> bool:
    """Whether ``value`` is a number no stored value reaches: an infinity or an integer
    beyond 64 bits."""
    if isinstance(value, float):
        return math.isinf(value)
    if isinstance(value, bool) or not isinstance(value, int):
        return False
    return not _INT64_MIN <= value <= _INT64_MAX


def _filter_json(value: Any, levels: int) -> Any:
    """``canonical_json(value, depth=levels)``, except that the bound of an order operator
    may also be an open bound (:func:`_open_bound`), kept as it is: the predicate compares
    it in Python, and it is never bound into SQL (only equalities are)."""
    if isinstance(value, (Mapping, list, tuple)) and levels < 1:
        return canonical_json(value, depth=levels)  # TooDeepError
    if isinstance(value, Mapping):
        operators = bool(value) and all(isinstance(k, str) and k.startswith("$") for k in value)
        out: dict[str, Any] = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise TypeError(f"JSON object keys must be strings, got {type(k).__name__}")
            if operators and k in _ORDER and _open_bound(v):
                out[k] = v
            else:
                out[json_string(k)] = _filter_json(v, levels - 1)
        return out
    if isinstance(value, (list, tuple)):
        return [_filter_json(v, levels - 1) for v in value]
    return canonical_json(value, depth=0)


def _scalar_equality(value: Any) -> Any:
    """The scalar a filter value requires equal (plain or ``$eq``), else ``_MISSING``."""
    if isinstance(value, dict) and set(value) == {"$eq"}:
        value = value["$eq"]
    if value is None or isinstance(value, (dict, list)):
        return _MISSING
    return value


def _check_operators(key: str, value: Any) -> None:
    """Refuse an unknown operator, or operators mixed with plain keys, anywhere the
    predicate applies operators: the value, its nested dicts and its lists' elements
    (an operator's bound is a plain JSON value, not looked into). Iterative: the depth
    was checked, but a wide value must not cost a call per element either way."""
    stack: list[tuple[str, Any]] = [(key, value)]
    while stack:
        where, item = stack.pop()
        if isinstance(item, list):
            stack.extend((where, element) for element in item)
            continue
        if not isinstance(item, dict):
            continue
        ops = [k for k in item if k.startswith("$")]
        if not ops:
            stack.extend(item.items())
            continue
        if len(ops) != len(item):
            raise StoreRequestError(
                f"the filter on {where!r} mixes operators and plain keys ({sorted(item)}); "
                "use either operators ($eq, $ne, $gt, ...) or a nested dict"
            )
        unknown = sorted(set(ops) - OPERATORS)
        if unknown:
            raise StoreRequestError(
                f"unsupported filter operator {unknown[0][:40]!r} on {where!r}; the store "
                f"supports {', '.join(sorted(OPERATORS))}"
            )
