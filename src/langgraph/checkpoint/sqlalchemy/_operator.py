"""The saver's operator methods: deleting runs, copying and pruning threads, the
per-thread lock, and browsing threads and storage.

And the two doors :mod:`.transfer` uses to move threads: storing copied checkpoints
with their writes, and reading our tables by key.

A mixin of :class:`.SQLAlchemySaver`, kept apart so that ``saver.py`` holds the LangGraph
contract and its lifecycle; each method is one plan of :mod:`._plans.methods` (the lock:
the plans of :mod:`._plans.locks`) driven through the saver's sync or async door, as the
contract's are.
"""

from __future__ import annotations

import builtins
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from datetime import timedelta
from typing import TYPE_CHECKING, Any, TypeVar

from langgraph.checkpoint.sqlalchemy._codec import configs as _configs
from langgraph.checkpoint.sqlalchemy._codec.records import PendingWrite
from langgraph.checkpoint.sqlalchemy._codec.threadinfo import ThreadInfo
from langgraph.checkpoint.sqlalchemy._engine.doors import Access
from langgraph.checkpoint.sqlalchemy._plans import locks as _locks

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig
    from langgraph.checkpoint.base import ChannelVersions, Checkpoint, CheckpointMetadata

    from langgraph.checkpoint.sqlalchemy._engine.runner import Runner
    from langgraph.checkpoint.sqlalchemy._plans.methods import Plans, PutArgs
    from sqlalchemy import Engine

__all__ = ["OperatorMethods"]

R = TypeVar("R")


class OperatorMethods:
    """Operator methods of :class:`.SQLAlchemySaver` (see the module)."""

    engine: Engine
    _runner: Runner
    _plans: Plans

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Delete the checkpoints whose ``metadata["run_id"]`` is listed, and their writes.

        Uses the indexed ``run_id`` column; blobs that no remaining checkpoint of the
        affected threads holds are removed too. One transaction. Deleting a run whose
        writes or snapshot a later DeltaChannel checkpoint still needs breaks that
        checkpoint's history (LangGraph contract note on ``delete_for_runs``).

        Args:
            run_ids: Run ids; an empty list does nothing.

        Raises:
            TypeError: ``run_ids`` is a bare string.
        """
        self._runner.drive(self._plans.delete_for_runs(run_ids))

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Async :meth:`delete_for_runs`."""
        await self._runner.adrive(self._plans.delete_for_runs(run_ids))

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy a thread: every checkpoint (same ids and parents), blob and write (with its
        ``task_path``), in every namespace, in one transaction. The source is untouched.

        Raises:
            ThreadNotEmptyError: The target thread already has checkpoints.
            CheckpointConfigError: A thread id of the wrong type or length.
        """
        self._runner.drive(self._plans.copy_thread(source_thread_id, target_thread_id))

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Async :meth:`copy_thread`."""
        await self._runner.adrive(self._plans.copy_thread(source_thread_id, target_thread_id))

    def prune(
        self,
        thread_ids: Sequence[str],
        *,
        strategy: str = "keep_latest",
        progress: Callable[[int], None] | None = None,
    ) -> None:
        """Prune threads, each in its own transaction.

        ``"delete"`` removes the threads. ``"keep_latest"`` keeps the newest checkpoint of
        every namespace with its pending writes and, when it holds DeltaChannel channels
        (``metadata["counters_since_delta_snapshot"]``) without a value, its ancestors and
        their writes back to the nearest checkpoint storing a value for each of them, so
        that it can still be resumed. Blobs no kept checkpoint holds are removed.

        Args:
            thread_ids: Thread ids; an empty list does nothing.
            strategy: ``"keep_latest"`` (default) or ``"delete"``.
            progress: Called after each thread's transaction commits, with the number
                of threads pruned so far (for a progress bar). An exception it raises
                stops the pruning; the threads before stay pruned.

        Raises:
            TypeError: ``thread_ids`` is a bare string.
            ValueError: Unknown strategy.
        """
        self._runner.drive(self._plans.prune(thread_ids, strategy, progress))

    async def aprune(
        self,
        thread_ids: Sequence[str],
        *,
        strategy: str = "keep_latest",
        progress: Callable[[int], None] | None = None,
    ) -> None:
        """Async :meth:`prune`."""
        await self._runner.adrive(self._plans.prune(thread_ids, strategy, progress))

    def reindex_metadata(
        self, *, progress: Callable[[int], None] | None = None
    ) -> builtins.list[str]:
        """Index the stored checkpoints for this saver's ``metadata_index_keys`` that the
        database does not index yet, so that filters on them read the index (SQLite,
        MySQL/MariaDB; PostgreSQL's GIN index covers every key: nothing to do).

        Run it after every process writing to the database lists the new keys (their
        puts then index them): one transaction that reads every checkpoint's metadata
        (O(N); on SQLite it holds the write lock throughout). Savers already running
        use the index for these keys after a restart; until then they scan.

        Args:
            progress: Called after each batch of stored checkpoints is indexed (2,000 a
                batch), inside the transaction, with the number of checkpoints read so
                far (from 0 again if the transaction is retried); never called when
                nothing is to be indexed (PostgreSQL, keys already indexed). An
                exception it raises rolls everything back.

        Returns:
            The keys indexed by this call (empty: nothing was missing).
        """
        return self._runner.drive(self._plans.reindex_metadata(progress))

    async def areindex_metadata(
        self, *, progress: Callable[[int], None] | None = None
    ) -> builtins.list[str]:
        """Async :meth:`reindex_metadata`."""
        return await self._runner.adrive(self._plans.reindex_metadata(progress))

    # -- per-thread lock across processes ----------------------------------------------------

    @contextmanager
    def lock_thread(self, thread_id: str, *, timeout: float = 30.0) -> Iterator[None]:
        """Hold a cross-process lock on a thread for the block: wrap a run in it so that
        runs on one thread happen one after the other, on every process.

        A lease row in ``lgsa_locks`` (30 s, renewed every 10 s while the block runs): it
        holds across Galera nodes, behind PgBouncer and through a promotion; a dead
        holder's lease ends within 30 s. SQLite: a lock database beside the file. No
        connection is held while the block runs.

        Args:
            thread_id: The thread.
            timeout: Seconds to wait for the lock.

        Raises:
            ThreadLockTimeout: Another holder kept the lock for ``timeout`` seconds.
            CheckpointConnectionError: The database stayed unreachable for the saver's
                ``retry_timeout``.
        """
        with _locks.hold(self._runner, self.engine.url, _configs.thread(thread_id), timeout):
            yield

    @asynccontextmanager
    async def alock_thread(self, thread_id: str, *, timeout: float = 30.0) -> AsyncIterator[None]:
        """Async :meth:`lock_thread` (``async with saver.alock_thread(thread_id):``); waits
        and renews without blocking the event loop."""
        key = _configs.thread(thread_id)
        async with _locks.ahold(self._runner, self.engine.url, key, timeout):
            yield

    # -- browsing: threads and storage (no checkpoint is decoded) --------------------------

    def list_threads(
        self,
        *,
        limit: int | None = 100,
        offset: int = 0,
        idle_for: timedelta | None = None,
        after: ThreadInfo | tuple[str, str] | str | None = None,
    ) -> builtins.list[ThreadInfo]:
        """Threads with their checkpoint counts and sizes, newest activity first.

        Newest activity is the thread's newest checkpoint id (ties by thread id). A page
        is found by walking the checkpoint-id index backwards until ``offset + limit``
        threads are met, then counting those threads only: its cost follows the
        checkpoints written since the page's last thread was active, not the size of the
        store. No checkpoint is deserialised.

        Args:
            limit: Most threads returned (None: all threads, one grouped query over the
                whole table, O(N)).
            offset: Threads skipped, for paging (O(offset): they are walked). Prefer
                ``after``.
            idle_for: Only threads whose newest checkpoint is older than this (judged by
                its UUIDv6 checkpoint id, which LangGraph makes from the clock). The walk
                starts at the cutoff and passes over the older checkpoints of threads
                still active; a store where most old checkpoints belong to active threads
                makes it long (each candidate thread is checked by its primary key).
            after: Cursor paging: the previous page's last :class:`ThreadInfo` (or its
                ``(last_checkpoint_id, thread_id)``, or only its thread id, whose newest
                checkpoint is then looked up). The page starts after it, in O(limit)
                walked entries plus the older checkpoints of threads already listed.

        Returns:
            :class:`ThreadInfo` records, one a thread.

        Raises:
            ValueError: ``limit`` or ``offset`` negative.
            CheckpointConfigError: ``after`` an empty thread id, or one of a thread
                without checkpoints.
            TypeError: ``after`` of another type.
        """
        plan = self._plans.list_threads(limit, offset, idle_for, after)
        return self._runner.drive(plan)

    async def alist_threads(
        self,
        *,
        limit: int | None = 100,
        offset: int = 0,
        idle_for: timedelta | None = None,
        after: ThreadInfo | tuple[str, str] | str | None = None,
    ) -> builtins.list[ThreadInfo]:
        """Async :meth:`list_threads`."""
        return await self._runner.adrive(self._plans.list_threads(limit, offset, idle_for, after))

    def storage_stats(
        self, thread_id: str | None = None, *, estimate: bool = False
    ) -> dict[str, dict[str, int]]:
        """Rows and serialised bytes per table, for the database or one thread.

        Args:
            thread_id: One thread's rows (always exact, by its primary key), or None for
                the whole database.
            estimate: Whole database: read the database's own statistics instead of
                counting (O(1) instead of three full scans). PostgreSQL: ``reltuples``
                (or the live-row counter before the first ``ANALYZE``) and
                ``pg_total_relation_size``; MySQL/MariaDB: ``information_schema.tables``
                (``table_rows``, ``data_length + index_length``); SQLite: the largest
                rowid and the mean size of the newest 1,000 rows. Bytes are then the
                storage used (pages, indexes) on PostgreSQL and MySQL/MariaDB, not the
                serialised lengths; rows may lag recent writes.

        Returns:
            ``{table name: {"rows": int, "bytes": int}}``; exact bytes are the lengths of
            the serialised columns, not the database's page usage. Exact figures of
            ``lgsa_checkpoint_blobs`` also hold ``"value_bytes"``: the bytes of the values
            its rows stand for, where ``"bytes"`` counts a value stored as a piece (the
            bytes a version appended to an earlier one) by the piece's length.
        """
        return self._runner.drive(self._plans.storage_stats(thread_id, estimate))

    async def astorage_stats(
        self, thread_id: str | None = None, *, estimate: bool = False
    ) -> dict[str, dict[str, int]]:
        """Async :meth:`storage_stats`."""
        return await self._runner.adrive(self._plans.storage_stats(thread_id, estimate))

    # -- for transfer: storing a copied checkpoint, reading our tables ---------------------

    def put_with_writes(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
        writes: Sequence[PendingWrite],
    ) -> RunnableConfig:
        """Store a checkpoint and its pending writes in one transaction (writes first).

        Used by :mod:`.transfer`'s copy and import. The same checks and guarantees as
        :meth:`put` followed by :meth:`put_writes`, through the same door; writes keep
        their ``idx`` when given (else regular writes are numbered per task), and there is
        no conflict check (``detect_conflicts``): a copy keeps its forks.

        Args:
            config: Config of the parent checkpoint (as for :meth:`put`).
            checkpoint: The checkpoint.
            metadata: Its metadata; must be JSON.
            new_versions: ``{channel: version}`` of the channel values to store.
            writes: The checkpoint's pending writes, in their order.

        Returns:
            The config of the stored checkpoint.

        Raises:
            CheckpointConfigError: Bad thread, namespace, ids or channel names.
            CheckpointMetadataError: Metadata that is not JSON.
        """
        plan = self._plans.put(config, checkpoint, metadata, new_versions, writes)
        return self._runner.drive(plan)

    def put_all_with_writes(self, items: Callable[[], Iterable[PutArgs]]) -> int:
        """Store checkpoints with their pending writes, all in one transaction: after it,
        or after a crash, an interruption or an error raised by ``items`` during it, the
        database holds every one of them or none. How :mod:`.transfer` moves a thread.

        Each is stored as :meth:`put_with_writes` stores it. ``items`` runs inside the
        transaction, so that it may read them from elsewhere one by one (memory: one at a
        time); on SQLite, other writers wait for the database until it ends. A transient
        failure (a dropped connection, a deadlock) starts the transaction over and calls
        ``items`` again: it must give the same checkpoints each time.

        Args:
            items: Called with no argument for an iterable of ``(config, checkpoint,
                metadata, new_versions, writes)``, the arguments of
                :meth:`put_with_writes`, in the order to store them.

        Returns:
            The number of checkpoints stored.

        Raises:
            CheckpointConfigError: Bad thread, namespace, ids or channel names (nothing
                stored).
            CheckpointMetadataError: Metadata that is not JSON (nothing stored).
        """
        return self._runner.drive(self._plans.put_all(items))

    def run_read(self, op: Callable[..., R], *args: Any) -> R:
        """Return ``op(conn, *args)`` run in a read transaction through the door of every
        read (schema check, one retry): how :mod:`.transfer` reads our tables by key.

        Raises:
            SchemaOutOfDateError: The tables are missing or at another revision.
        """
        return self._runner.run(Access.READ, op, args)
