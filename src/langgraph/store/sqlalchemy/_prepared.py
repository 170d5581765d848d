"""A store batch checked and planned, before its embeddings are computed
(:func:`prepare` makes one, :func:`finish` makes it a :class:`._shapes.Batch` once the
embeddings are known), and the batch of a round of concurrent one-operation calls
(:meth:`Prepared.joined`).

Every operation is checked here, before any is run: nothing runs when one is bad. A
put's value is checked and written as JSON text once (:func:`._loading.item_value`), its
namespace checked and encoded once a batch (the puts of a batch mostly share a few
namespaces).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from langgraph.store.base import (
    NOT_PROVIDED,
    GetOp,
    InvalidNamespaceError,
    ListNamespacesOp,
    Op,
    PutOp,
    SearchOp,
    validate_op_namespace,
)

from langgraph.store.sqlalchemy import namespaces
from langgraph.store.sqlalchemy._loading import item_value
from langgraph.store.sqlalchemy._options import ttl_minutes
from langgraph.store.sqlalchemy._shapes import (
    Batch,
    GetPlan,
    ListPlan,
    Native,
    PrefixSizes,
    PutRow,
    SearchPlan,
)
from langgraph.store.sqlalchemy.filters import compile_filter
from langgraph.store.sqlalchemy.vectors import IndexSpec, field_name, pack, texts_to_embed

__all__ = [
    "MAX_CHECKED",
    "MAX_COUNT",
    "Prepared",
    "finish",
    "get_plan",
    "item_namespace",
    "prepare",
]

#: Largest ``limit``/``offset``/``max_depth`` accepted: what every dialect binds as an
#: integer (a 64-bit one overflows SQLite and PostgreSQL's LIMIT).
MAX_COUNT = 2**31 - 1


class Prepared:
    """A batch checked, before embedding: its reads planned, the last put of each key
    checked and made a row (vectors to come), the texts and queries to embed.

    Args:
        count: The number of operations.
        now: The batch's clock, seconds since the epoch.
    """

    def __init__(self, count: int, now: float) -> None:
        self.count = count
        self.batch = Batch(now=now)
        self.batch.count = count
        self.texts: list[tuple[int, str, str]] = []  # (put index, field, text)
        self.queries: set[str] = set()  # the search queries to embed
        #: The last put of each key, checked: its row (expiry from :attr:`batch`'s
        #: clock), vectors not yet attached.
        self.puts: list[PutRow] = []

    @classmethod
    def joined(cls, parts: Sequence[Prepared], now: float) -> Prepared:
        """One batch of one-operation batches, checked already (a round of concurrent
        calls): operation ``i`` is ``parts[i]``'s; the last put of each key wins, its
        expiry counted from the round's clock."""
        out = cls(len(parts), now)
        last: dict[tuple[str, str], int] = {}
        for i, part in enumerate(parts):
            assert part.count == 1
            out.batch.reads.extend((i, plan) for _, plan in part.batch.reads)
            out.queries.update(part.queries)
            for row in part.puts:
                last[(row.namespace, row.key)] = i
        for i in last.values():
            part = parts[i]
            n = len(out.puts)
            out.puts.extend(
                row if row.ttl_minutes is None else row._replace(expires_at=_expiry(now, row))
                for row in part.puts
            )
            out.texts.extend((n, name, text) for _, name, text in part.texts)
        return out


def _expiry(now: float, row: PutRow) -> float:
    assert row.ttl_minutes is not None
    return now + row.ttl_minutes * 60.0


def prepare(
    ops: Sequence[Op],
    now: float,
    index: IndexSpec | None,
    default_ttl: Any,
    sizes: PrefixSizes,
) -> Prepared:
    """Check every operation (nothing runs when one is bad) and plan the reads; keep
    the last put of each key, its value checked and written as JSON text, its texts to
    embed listed. ``sizes``: the store's :data:`.PrefixSizes`, shared by its searches.

    Raises:
        InvalidNamespaceError, TypeError, ValueError, StoreRequestError: As
            :meth:`.SQLAlchemyStore.batch`.
    """
    prepared = Prepared(len(ops), now)
    reads = prepared.batch.reads
    puts: dict[tuple[str, str], PutOp] = {}
    known = _CHECKED  # namespaces checked before (item_namespace's memory)
    for i, op in enumerate(ops):
        if type(op) is PutOp:
            ns = known.get(op.namespace) if type(op.namespace) is tuple else None
            if ns is None:
                ns = _put_namespace(op)
            puts[(ns, namespaces.check_key(op.key))] = op
            continue
        if isinstance(op, GetOp):
            reads.append((i, get_plan(op.namespace, op.key, op.refresh_ttl)))
            continue
        validate_op_namespace(op)  # labels: no ".", no NUL, not empty (LangGraph's rules)
        if isinstance(op, SearchOp):
            reads.append((i, _search_plan(op, index, sizes)))
            if op.query and index:
                prepared.queries.add(op.query)
        elif isinstance(op, ListNamespacesOp):
            reads.append((i, _list_plan(op)))
        elif isinstance(op, PutOp):  # a subclass
            ns = _put_namespace(op)
            puts[(ns, namespaces.check_key(op.key))] = op
        else:
            raise TypeError(f"unknown store operation: {type(op).__name__}")
    rows = prepared.puts
    texts = prepared.texts
    new = tuple.__new__  # a PutRow from its fields, without NamedTuple's Python __new__
    for n, ((ns, key), op) in enumerate(puts.items()):
        if op.value is None:
            rows.append(new(PutRow, (ns, key, None, None, None, (), None, None, None)))
            continue
        value, text = item_value(op.namespace, op.key, op.value)
        given: Any = op.ttl  # NOT_PROVIDED from callers of batch() that leave it out
        if given is NOT_PROVIDED:
            given = default_ttl
        minutes = None if given is None else ttl_minutes(given)
        expires = None if minutes is None else now + minutes * 60.0
        rows.append(new(PutRow, (ns, key, value, expires, minutes, (), None, None, text)))
        if index and op.index is not False:
            paths = None if op.index is None else list(op.index)
            for name, embedded in texts_to_embed(index, value, paths):
                texts.append((n, field_name(name), embedded))
    return prepared


def get_plan(namespace: tuple[str, ...], key: str, refresh_ttl: bool | None) -> GetPlan:
    """A get (``GetOp``'s fields) checked (LangGraph's namespace rules and the store's)
    and planned.

    Raises:
        InvalidNamespaceError, TypeError, ValueError: A bad namespace or key.
    """
    return GetPlan(item_namespace(namespace), namespaces.check_key(key), bool(refresh_ttl))


#: Most namespaces :func:`item_namespace` remembers; past it, it starts again.
MAX_CHECKED = 4096
_CHECKED: dict[tuple[str, ...], str] = {}


def item_namespace(namespace: tuple[str, ...]) -> str:
    """An item's namespace checked (LangGraph's rules: labels not empty, without ``.``
    or NUL; the store's: :func:`.namespaces.encode`) and encoded. A tuple of strings
    that passed is remembered (at most :data:`MAX_CHECKED`): a store's calls name few
    namespaces, each checked once.

    Raises:
        InvalidNamespaceError: A bad namespace.
    """
    if type(namespace) is tuple:
        found = _CHECKED.get(namespace)
        if found is not None:
            return found
    validate_op_namespace(GetOp(namespace, ""))
    text = namespaces.encode(namespace)
    if type(namespace) is tuple and all(type(label) is str for label in namespace):
        if len(_CHECKED) >= MAX_CHECKED:
            _CHECKED.clear()
        _CHECKED[namespace] = text
    return text


def _put_namespace(op: PutOp) -> str:
    """A put's namespace checked (LangGraph's rules and the store's) and encoded."""
    if not op.namespace:
        raise InvalidNamespaceError("Namespace cannot be empty.")
    return item_namespace(op.namespace)


def finish(
    prepared: Prepared,
    embedded: Sequence[Sequence[float]],
    queries: dict[str, list[float]],
    index: IndexSpec | None,
    native: Native | None,
) -> Batch:
    """The batch with its put rows (vectors attached) and query vectors.

    Raises:
        ValueError: The embedding function returned another number of vectors than
            texts, or a vector of the wrong size.
    """
    batch = prepared.batch
    batch.native = native is not None
    if len(embedded) != len(prepared.texts):
        raise ValueError(
            f"the embedding function returned {len(embedded)} vectors for "
            f"{len(prepared.texts)} texts"
        )
    rows = list(prepared.puts)
    if prepared.texts:
        assert index is not None
        per_put: dict[int, list[tuple[str, bytes]]] = {}
        for (n, name, _), vector in zip(prepared.texts, embedded, strict=False):
            per_put.setdefault(n, []).append((name, pack(vector, index.dims)))
        for n, packed in per_put.items():
            rows[n] = rows[n]._replace(vectors=packed)
    batch.puts = rows
    for position, (i, read) in enumerate(batch.reads):
        if isinstance(read, SearchPlan) and read.text is not None:
            assert index is not None
            vector = [float(v) for v in queries[read.text]]
            blob = pack(vector, index.dims)
            batch.reads[position] = (
                i,
                replace(
                    read, query=vector, query_blob=blob, distance=index.distance, native=native
                ),
            )
    return batch


def _search_plan(op: SearchOp, index: IndexSpec | None, sizes: PrefixSizes) -> SearchPlan:
    limit, offset = _count("limit", op.limit), _count("offset", op.offset)
    prefix = namespaces.encode(op.namespace_prefix, prefix=True)
    flt = compile_filter(op.filter)
    text = op.query if op.query and index else None
    return SearchPlan(prefix, flt, limit, offset, bool(op.refresh_ttl), text, sizes=sizes)


def _count(name: str, value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= MAX_COUNT:
        raise ValueError(f"{name} must be an integer from 0 to {MAX_COUNT}, not {value!r}")
    return value


def _list_plan(op: ListNamespacesOp) -> ListPlan:
    limit, offset = _count("limit", op.limit), _count("offset", op.offset)
    depth = None if op.max_depth is None else _count("max_depth", op.max_depth)
    conditions = namespaces.check_conditions(op.match_conditions or ())
    return ListPlan(conditions, depth, limit, offset)
