"""Moving in: copy an official LangGraph store into a :class:`~.store.SQLAlchemyStore`.

Sources: a ``SqliteStore`` file (``langgraph-checkpoint-sqlite``) or a ``PostgresStore``
database (``langgraph-checkpoint-postgres``), read by :mod:`.official` (which says how a
row becomes an item). A row that is not an item our store can hold (bad JSON, not an
object, a value or namespace our store refuses, an unreadable or out-of-range time, a
TTL above the store's cap, a value larger than ``max_value_bytes``) is reported in
:attr:`StoreCopyReport.rejected` and skipped; it never stops the copy. Items already
expired at the start of the copy are skipped (counted in ``expired``): our store would
never return them and its sweep would delete them.

Embeddings: a source vector is reused when the target has an index config of the same
``dims``; otherwise the target computes them with its own index config
(``vectors=None``). An item with no vectors in the source (put with ``index=False``) is
embedded by a target that has an index config.

Resuming: the copy is idempotent and re-runnable. Each page is compared with what the
target already holds for those keys (value, created, updated and expiry times, TTL, and,
when the target has an index config, whether the item has vectors there: a first copy
without one is completed by a re-run with one); items that are the same are skipped
(``unchanged``: nothing written, no embedding computed), the others are written with
:meth:`~.store.SQLAlchemyStore.load_items`, one transaction a page. An interrupted copy
is resumed by running it again: the pages that were committed are skipped, the rest are
copied. No progress marker is kept anywhere, so a re-run also catches up with items
changed in the source since (a refreshed TTL included). After the copy every source item
is read again and compared with the target (:attr:`StoreCopyReport.verified`,
``differ``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from langgraph.store.base.embed import get_text_at_path, tokenize_path

from langgraph.store.sqlalchemy import namespaces
from langgraph.store.sqlalchemy._loading import StoredItem, seconds
from langgraph.store.sqlalchemy.official import (
    BATCH,
    MAX_VALUE_BYTES,
    SourceRow,
    StoreSource,
    StoreSourceKind,
    open_store_source,
)
from langgraph.store.sqlalchemy.store import SQLAlchemyStore
from langgraph.store.sqlalchemy.vectors import field_paths

__all__ = [
    "BATCH",
    "MAX_VALUE_BYTES",
    "RejectedRow",
    "StoreCopyReport",
    "StoreSource",
    "StoreSourceKind",
    "copy_store",
    "open_store_source",
]

#: Rejected rows and differing items named in a report (all are counted).
SHOWN = 20


@dataclass(frozen=True)
class RejectedRow:
    """A source row that is not an item our store can hold: skipped.

    Attributes:
        namespace: The row's ``prefix`` as read (namespace labels joined by ``"."``).
        key: The row's key as read.
        reason: Why it was skipped.
    """

    namespace: str
    key: str
    reason: str


@dataclass
class StoreCopyReport:
    """What :func:`copy_store` did.

    Attributes:
        source: The kind of source read (``sqlite`` or ``postgres``).
        read: Rows read from the source.
        copied: Items written to the target (new or different there).
        unchanged: Items the target already held the same (a re-run): not written.
        expired: Items expired at the start of the copy: not copied.
        rejected: Rows skipped because they are not items (the first :data:`SHOWN`).
        rejected_count: All rows skipped so.
        vectors_reused: Copied items whose source embeddings were kept.
        verified: Source items found the same in the target after the copy.
        differ: Source items missing or different in the target after the copy
            (changed in the source meanwhile, or failed): run the copy again.
        differing: ``"namespace/key"`` of the first :data:`SHOWN` of them.
    """

    source: str
    read: int = 0
    copied: int = 0
    unchanged: int = 0
    expired: int = 0
    rejected: list[RejectedRow] = field(default_factory=list)
    rejected_count: int = 0
    vectors_reused: int = 0
    verified: int = 0
    differ: int = 0
    differing: list[str] = field(default_factory=list)


# -- the target ------------------------------------------------------------------------


class _Target:
    """What the target holds, read page by page without refreshing any TTL (expired
    items included): rows of the items table, and which items have vectors."""

    def __init__(self, store: SQLAlchemyStore) -> None:
        self.store = store
        index = store.index_config
        self.dims = int(index["dims"]) if index else None
        fields = field_paths(index) if index else []
        self.fields = [(p, p if p == "$" else tokenize_path(p)) for p in fields]

    def held(self, items: Sequence[StoredItem]) -> tuple[dict[tuple[str, str], Any], set[Any]]:
        """The rows of ``items`` in the target, and the keys of those with vectors (only
        read when the target has an index config), through the store's door."""
        keys = [_stored_key(item) for item in items]
        return self.store.held(keys, with_vectors=bool(self.fields))

    def embeds(self, item: StoredItem) -> bool:
        """Whether the target's index config finds a text to embed in ``item``."""
        return any(
            tokens == "$" or get_text_at_path(item.value, tokens) for _, tokens in self.fields
        )

    def same(self, item: StoredItem, rows: dict[tuple[str, str], Any], embedded: set[Any]) -> bool:
        """Whether the target holds ``item`` as the copy would write it, with vectors
        when its index config embeds the item."""
        key = _stored_key(item)
        row = rows.get(key)
        if row is None:
            return False
        expires = None if item.expires_at is None else seconds(item.expires_at)
        return bool(
            row.value == item.value
            and row.created_at == seconds(item.created_at)
            and row.updated_at == seconds(item.updated_at)
            and row.expires_at == expires
            and row.ttl_minutes == item.ttl_minutes
            and (key in embedded or not self.embeds(item))
        )


def _stored_key(item: StoredItem) -> tuple[str, str]:
    return (namespaces.encode(item.namespace), item.key)


def _alive(
    rows: list[SourceRow], now: datetime, report: StoreCopyReport | None
) -> list[StoredItem]:
    """The items of a page that are not expired at ``now``; rejected rows and expired
    items counted in ``report`` when given."""
    out = []
    for row in rows:
        if row.item is None:
            if report is not None:
                report.rejected_count += 1
                if len(report.rejected) < SHOWN:
                    report.rejected.append(RejectedRow(row.prefix, row.key, row.reason))
            continue
        if row.item.expires_at is not None and row.item.expires_at <= now:
            if report is not None:
                report.expired += 1
            continue
        out.append(row.item)
    return out


def _reusable(item: StoredItem, dims: int | None) -> StoredItem:
    """``item`` with its source vectors only when they fit the target's index."""
    if item.vectors is None:
        return item
    if dims is not None and all(len(v) == dims for v in item.vectors.values()):
        return item
    return StoredItem(
        item.namespace,
        item.key,
        item.value,
        item.created_at,
        item.updated_at,
        item.expires_at,
        item.ttl_minutes,
        None,
    )


def _load(
    target: SQLAlchemyStore, todo: list[StoredItem], report: StoreCopyReport
) -> list[StoredItem]:
    """Write ``todo`` in one transaction; when the store refuses an item (a check this
    module does not make, or the embedding model's vector of the wrong size), write them
    one by one and report the ones refused (the verification then counts them as
    differing).

    Returns:
        The items written.
    """
    if not todo:
        return []
    try:
        target.load_items(todo, batch_size=len(todo))
        return todo
    except (ValueError, TypeError):  # InvalidNamespaceError is a ValueError
        pass
    written = []
    for item in todo:
        try:
            target.load_items([item])
        except (ValueError, TypeError) as e:
            report.rejected_count += 1
            if len(report.rejected) < SHOWN:
                reason = str(e) or type(e).__name__
                report.rejected.append(RejectedRow(".".join(item.namespace), item.key, reason))
            continue
        written.append(item)
    return written


def copy_store(
    source: StoreSource,
    target: SQLAlchemyStore,
    *,
    batch_size: int = BATCH,
    progress: Callable[[int], None] | None = None,
    verify: bool = True,
    max_value_bytes: int = MAX_VALUE_BYTES,
) -> StoreCopyReport:
    """Copy every item of ``source`` into ``target`` (see the module's docstring).

    Args:
        source: From :func:`open_store_source`.
        target: Our store, set up (``setup()``).
        batch_size: Rows a page: read, compared and written in one transaction.
        progress: Called with the number of rows read so far after each page.
        verify: Read the source again afterwards and compare every item with the target.
        max_value_bytes: Largest value copied, in bytes of its JSON text (default 16
            MiB): a larger one is rejected without being read.

    Returns:
        The report: copied, unchanged, expired, rejected, verified, differ.

    Raises:
        ValueError: ``batch_size`` or ``max_value_bytes`` is not positive, or the
            target's embedding model returned vectors of the wrong size.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be 1 or more, not {batch_size!r}")
    if max_value_bytes < 1:
        raise ValueError(f"max_value_bytes must be 1 or more, not {max_value_bytes!r}")
    now = datetime.now(timezone.utc)
    ours = _Target(target)
    dims = ours.dims
    report = StoreCopyReport(source.kind)
    for page in source.pages(batch_size, max_value_bytes=max_value_bytes):
        report.read += len(page)
        alive = _alive(page, now, report)
        rows, embedded = ours.held(alive)
        todo = [_reusable(i, dims) for i in alive if not ours.same(i, rows, embedded)]
        report.unchanged += len(alive) - len(todo)
        written = _load(target, todo, report)
        report.copied += len(written)
        report.vectors_reused += sum(1 for i in written if i.vectors and dims is not None)
        if progress is not None:
            progress(report.read)
    if verify:
        for page in source.pages(batch_size, max_value_bytes=max_value_bytes):
            alive = _alive(page, now, None)
            rows, embedded = ours.held(alive)
            for item in alive:
                if ours.same(item, rows, embedded):
                    report.verified += 1
                else:
                    report.differ += 1
                    if len(report.differing) < SHOWN:
                        report.differing.append(".".join(item.namespace) + "/" + item.key)
    return report
