"""The plans: the steps of each saver method, shared by its sync and async twins.

A plan is a generator (:data:`.._engine.doors.Plan`) that checks and encodes a call's
arguments (:mod:`.._codec.rows`), yields each database operation to run as ``(access, op,
args)`` (operations of :mod:`.._ops`), receives what it returned, and returns the method's
result. ``Runner.drive`` runs a plan on the sync engine, ``Runner.adrive`` on the async one:
the method's logic is written once here, and the saver's two doors only differ in how they
run it. :class:`Pages` is the plan of ``list()``, which yields checkpoints page by page
instead of returning once.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import timedelta
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    DeltaChannelHistory,
)

from langgraph.checkpoint.sqlalchemy._codec import configs as _configs
from langgraph.checkpoint.sqlalchemy._codec import rows as _rows
from langgraph.checkpoint.sqlalchemy._codec.records import (
    CheckpointKey,
    CheckpointRecord,
    Pending,
    PendingWrite,
)
from langgraph.checkpoint.sqlalchemy._codec.threadinfo import ThreadInfo
from langgraph.checkpoint.sqlalchemy._engine.doors import Access, Call, Plan, Steps
from langgraph.checkpoint.sqlalchemy._ops import browse as _browse
from langgraph.checkpoint.sqlalchemy._ops import checkpoints as _checkpoints
from langgraph.checkpoint.sqlalchemy._ops import history as _history
from langgraph.checkpoint.sqlalchemy._ops import listing as _listing
from langgraph.checkpoint.sqlalchemy._ops import threads as _threads
from langgraph.checkpoint.sqlalchemy._plans.browse import threads_plan

__all__ = ["Pages", "Plans", "PutArgs"]

# Short names of the contract's parameter types, for the plans' signatures.
Config = RunnableConfig
Meta = CheckpointMetadata
Versions = ChannelVersions
Writes = Sequence[PendingWrite] | None
#: The arguments of one ``put_with_writes``.
PutArgs = tuple[Config, Checkpoint, Meta, Versions, Sequence[PendingWrite]]


class Plans:
    """The plans of one saver's methods.

    Args:
        codec: The saver's codec (arguments in, tuples out).
        st: The saver's statements (its dialect's query builder).
        detect_conflicts: Check a run's checkpoints for conflicts (see the saver's
            argument of that name).
    """

    def __init__(
        self, codec: _rows.Codec, st: _checkpoints.Statements, *, detect_conflicts: bool = False
    ) -> None:
        self.codec = codec
        self.st = st
        self.detect_conflicts = detect_conflicts

    def with_codec(self, codec: _rows.Codec) -> Plans:
        """These plans with another codec (a saver cloned with another serializer)."""
        return Plans(codec, self.st, detect_conflicts=self.detect_conflicts)

    def get_tuple(self, config: RunnableConfig) -> Plan[CheckpointTuple | None]:
        key = _configs.checkpoint_key(config)
        rec = yield Access.READ_ONE, _checkpoints.get_checkpoint, (self.st, *key)
        if rec is not None and rec.incomplete:
            rec = yield Access.READ, _checkpoints.get_checkpoint, (self.st, *key)
        if rec is None:
            return None
        found = self.codec.to_tuple(rec)
        # What a run resumes from: its unchanged values need no serialising again, its
        # growing ones may be stored as pieces of these.
        self.codec.remember(rec, found.checkpoint["channel_values"])
        return found

    def put(
        self,
        config: Config,
        cp: Checkpoint,
        meta: Meta,
        versions: Versions,
        writes: Writes = None,
        earlier: dict[tuple[str, str, str], Pending] | None = None,
    ) -> Plan[RunnableConfig]:
        """``put`` (``writes`` None) or ``put_with_writes`` (``writes`` given); inside
        :func:`_put_all`'s transaction, ``earlier`` holds the values stored by its
        earlier puts (learnt here; the cache learns them once it commits)."""
        rows, stored = self.codec.put_rows(config, cp, meta, versions, earlier)
        if writes is None:  # a run's put (transfer copies histories as they are)
            row = rows.checkpoint
            _configs.check_child_order(row["checkpoint_id"], row["parent_checkpoint_id"])
        if writes is not None:
            # transfer: the writes in the same transaction, no conflict check.
            rows = rows._replace(writes=self.codec.pending_rows(stored, writes))
            yield Access.WRITE, _checkpoints.put, (self.st, rows)
        elif self.detect_conflicts and rows.checkpoint["metadata"].get("source") in (
            "input",
            "loop",
        ):
            # A run's step (source input/loop), checked for conflicts.
            yield Access.WRITE, _checkpoints.put_checked, (self.st, rows)
        else:
            # A put of one statement (values all in the checkpoint row, or its blob rows
            # in the statement's WITH clause on PostgreSQL) is atomic on its own: no
            # transaction around it (saving BEGIN and COMMIT: two driver calls on
            # SQLite, two round trips on PostgreSQL).
            one = _checkpoints.one_statement(self.st, rows)
            yield (Access.WRITE_ONE if one else Access.WRITE), _checkpoints.put, (self.st, rows)
        if earlier is not None:  # not committed yet: for the transaction's next puts
            earlier.update((p[0], p) for p in rows.learnt)
        else:  # committed
            self.codec.stored(rows.learnt)
        return stored

    def put_all(self, items: Callable[[], Iterable[PutArgs]]) -> Plan[int]:
        """``put_all_with_writes``: every checkpoint of ``items()`` in one transaction."""
        earlier: dict[tuple[str, str, str], Pending] = {}
        stored: int = yield Access.WRITE, _put_all, (self, items, earlier)
        self.codec.stored(list(earlier.values()))  # committed
        return stored

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str,
    ) -> Plan[None]:
        rows, replace = self.codec.write_rows(config, writes, task_id, task_path)
        if rows:
            # One multi-row INSERT is atomic on its own; several go in a transaction.
            one = _checkpoints.one_insert(rows)
            access = Access.WRITE_ONE if one else Access.WRITE
            yield access, _checkpoints.put_writes, (self.st, rows, replace)

    def delete_thread(self, thread_id: str) -> Plan[None]:
        one = self.st.delete_thread_one is not None
        access = Access.WRITE_ONE if one else Access.WRITE
        thread = _configs.thread(thread_id)
        # Its values can no longer be extended (before: a put racing the delete must
        # not take one as a base; after: nor one a put cached meanwhile).
        self.codec.values.forget(thread)
        yield access, _checkpoints.delete_thread, (self.st, thread)
        self.codec.values.forget(thread)

    def delta_history(
        self, config: RunnableConfig, channels: Sequence[str]
    ) -> Plan[dict[str, DeltaChannelHistory]]:
        if not channels:
            return {}
        key = _configs.checkpoint_key(config)
        unique = list(dict.fromkeys(channels))
        raw = yield Access.READ, _history.history, (self.st, *key, unique)
        return self.codec.histories(raw, channels, key[0], key[1])

    def delete_for_runs(self, run_ids: Sequence[str]) -> Plan[None]:
        keys = _configs.run_keys(run_ids)
        if keys:
            # The runs' threads are known to the database only: forget every value.
            self.codec.values.clear()
            yield Access.WRITE, _threads.delete_for_runs, (self.st, keys)
            self.codec.values.clear()

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> Plan[None]:
        source, target = _configs.thread(source_thread_id), _configs.thread(target_thread_id)
        yield Access.WRITE, _threads.copy_thread, (source, target)

    def prune(
        self,
        thread_ids: Sequence[str],
        strategy: str,
        progress: Callable[[int], None] | None = None,
    ) -> Plan[None]:
        """Each thread in its own transaction; every argument checked before the first;
        ``progress`` told the threads done after each."""
        threads = [_configs.thread(t) for t in _configs.id_list(thread_ids, "thread_ids")]
        op: Callable[..., None]
        extra: tuple[Any, ...]
        if strategy == "delete":
            op, extra = _checkpoints.delete_thread, ()
        elif strategy == "keep_latest":
            op, extra = _threads.prune_keep_latest, (self.codec.pending_delta_channels,)
        else:
            raise ValueError(f"unknown prune strategy {strategy!r}: use 'keep_latest' or 'delete'")
        for done, t in enumerate(threads, 1):
            self.codec.values.forget(t)  # what a pruned version could be extended from
            yield Access.WRITE, op, (self.st, t, *extra)
            self.codec.values.forget(t)
            if progress is not None:
                progress(done)

    def list_threads(
        self, limit: int | None, offset: int, idle_for: timedelta | None, after: object
    ) -> Plan[builtins.list[ThreadInfo]]:
        return threads_plan(self.st, limit, offset, idle_for, after)

    def registered_keys(self) -> Plan[frozenset[str]]:
        if not self.st.qb.metadata_index_rows:
            return frozenset()  # PostgreSQL: no index rows, no connection
        keys: frozenset[str] = yield Access.READ, _checkpoints.registered_keys, (self.st,)
        return keys

    def reindex_metadata(self, progress: Callable[[int], None] | None = None) -> Plan[list[str]]:
        keys = self.codec.index_keys
        call = Access.WRITE, _threads.reindex_metadata, (self.st, keys, progress)
        done: list[str] = yield call
        return done

    def storage_stats(
        self, thread_id: str | None, estimate: bool
    ) -> Plan[dict[str, dict[str, int]]]:
        key = _configs.thread(thread_id) if thread_id is not None else None
        call = Access.READ, _browse.storage_stats, (self.st, key, bool(estimate))
        stats: dict[str, dict[str, int]] = yield call
        return stats


def _put_all(
    conn: Any,
    plans: Plans,
    items: Callable[[], Iterable[PutArgs]],
    earlier: dict[tuple[str, str, str], Pending],
) -> int:
    """Run the plan of ``put_with_writes`` for each of ``items()`` on ``conn``, inside
    the caller's one transaction; how many were stored. A retry of the transaction
    calls ``items`` again, and forgets what the failed attempt stored (``earlier``:
    the values a later put of the transaction may be stored as a piece of)."""
    earlier.clear()
    stored = 0
    for args in items():
        steps = Steps(plans.put(*args, earlier=earlier))
        for step in steps:
            assert type(step) is tuple  # a put yields database operations only
            _access, op, op_args = step
            steps.result = op(conn, *op_args)
        stored += 1
    return stored


class Pages:
    """The pages of one ``list()`` call: iterating gives the call that fetches the next
    page, :meth:`decoded` the checkpoints of a fetched page, until done or ``limit``.

    Args:
        codec: Decodes the records.
        st: The saver's statements.
        query: The listing's conditions.
        limit: Most checkpoints listed, None for all.
        size: Checkpoints a page.

    Raises:
        ValueError: ``limit`` not None or an int from 0 to 2**63 - 1.
    """

    def __init__(
        self,
        codec: _rows.Codec,
        st: _checkpoints.Statements,
        query: _listing.ListQuery,
        limit: int | None,
        size: int,
    ) -> None:
        _configs.check_count("limit", limit, none=True)
        self.codec = codec
        self.st = st
        self.query = query
        self.size = size
        self.remaining = limit
        self.cursor: CheckpointKey | None = None
        self.done = limit == 0

    def _requested(self) -> int:
        return self.size if self.remaining is None else min(self.size, self.remaining)

    def __iter__(self) -> Iterator[Call]:
        while not self.done:
            args = (self.st, self.query, self.cursor, self._requested())
            yield Access.READ, _listing.list_page, args

    def decoded(self, page: list[CheckpointRecord]) -> Iterator[CheckpointTuple]:
        """Take a fetched page (moving the cursor past it) and decode its records lazily,
        skipping (and logging) those that cannot be decoded."""
        requested = self._requested()
        if self.remaining is not None:
            self.remaining -= len(page)
        if len(page) < requested or self.remaining == 0:
            self.done = True
        elif page:
            last = page[-1].row
            self.cursor = (last.thread_id, last.checkpoint_ns, last.checkpoint_id)
        return (tup for rec in page if (tup := self.codec.listed(rec)) is not None)
