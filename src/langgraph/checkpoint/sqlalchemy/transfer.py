"""Move checkpoints between databases: copy from the official savers, export and import.

* :func:`open_source` opens a database to read from: ours (tables ``lgsa_*``), an
  official ``SqliteSaver`` file (langgraph-checkpoint-sqlite: tables ``checkpoints``,
  ``writes``) or an official ``PostgresSaver`` database (langgraph-checkpoint-postgres:
  ``checkpoints``, ``checkpoint_blobs``, ``checkpoint_writes``), told apart by the tables
  present. An official store opens as a :class:`Source`: the official saver, with the
  tables and engine transfer reads beside it (our saver reads its own tables).
* :func:`copy_threads` copies every checkpoint of every namespace of some threads, with
  their ids, parents, metadata and pending writes, into a :class:`SQLAlchemySaver`. It is
  resumable: a checkpoint the target already has is skipped, so an interrupted copy is
  finished by running it again.
* :func:`export_threads` / :func:`import_threads` write and read a versioned JSON lines
  file, portable between our databases.

Each checkpoint is stored in the target with its pending writes in one transaction
(writes first, :meth:`.SQLAlchemySaver.put_with_writes`), so a checkpoint present in the
target always has its writes.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import sqlite3
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import IO, Any, Literal, TypeVar, cast
from urllib.parse import quote

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
)
from langgraph.checkpoint.serde.base import SerializerProtocol

from sqlalchemy import (
    Connection,
    Engine,
    MetaData,
    Table,
    create_engine,
    func,
    inspect,
    null,
    select,
)
from sqlalchemy.engine import make_url
from sqlalchemy.pool import NullPool

from . import _maintenance
from ._codec import PendingWrite, checkpoint_config, namespace, thread
from ._engines import resolve_urls
from .errors import CheckpointConfigError
from .saver import SQLAlchemySaver
from .schema import checkpoints as our_checkpoints
from .schema import full_name, name_key, stored_full
from .schema import writes as our_writes

__all__ = [
    "EXPORT_FORMAT",
    "EXPORT_VERSION",
    "CopyReport",
    "ExportFormatError",
    "ExportReport",
    "ImportReport",
    "Mismatch",
    "Refused",
    "SourceKind",
    "UnknownSourceError",
    "copy_threads",
    "count_checkpoints",
    "export_threads",
    "import_threads",
    "missing_threads",
    "open_source",
]

#: ``format`` of the first line of an export file.
EXPORT_FORMAT = "langgraph-checkpoint-sqlalchemy/jsonl"
#: ``version`` of the export format written by :func:`export_threads`.
EXPORT_VERSION = 1

SourceKind = Literal["auto", "sqlalchemy", "sqlite", "postgres"]
"""What :func:`open_source` reads: ``"auto"`` detects it from the tables present."""

_OUR_TABLES = {"lgsa_checkpoints", "lgsa_checkpoint_blobs", "lgsa_checkpoint_writes"}
_SQLITE_TABLES = {"checkpoints", "writes"}
_POSTGRES_TABLES = {"checkpoints", "checkpoint_blobs", "checkpoint_writes"}


class UnknownSourceError(ValueError):
    """:func:`open_source` found no checkpoint tables it can read at the URL (or found
    several kinds and was not told which one to read: pass ``kind``)."""


class ExportFormatError(ValueError):
    """An import file that is not an export of this library: wrong first line, unknown
    format or version, or a line that is not a checkpoint record (the message gives the
    line number)."""


@dataclass
class Mismatch:
    """A thread of which some source checkpoints or pending writes are not in the target
    after a copy (checked by key; the target may hold more: it may have moved on).

    Attributes:
        thread_id: The thread.
        source_count: Checkpoints of the thread in the source.
        missing_checkpoints: Source checkpoints (by namespace and id) absent from the target.
        missing_writes: Source pending writes (by checkpoint, task and channel) absent
            from the target.
        first_missing: ``"checkpoint_ns/checkpoint_id"`` of the first checkpoint found
            missing or missing a write.
    """

    thread_id: str
    source_count: int
    missing_checkpoints: int
    missing_writes: int
    first_missing: str


@dataclass
class CopyReport:
    """What :func:`copy_threads` did.

    Attributes:
        threads: Threads copied (the refused ones not counted).
        checkpoints_copied: Checkpoints written to the target.
        checkpoints_skipped: Checkpoints the target already had (a re-run).
        writes_copied: Pending writes stored along with the copied checkpoints.
        mismatches: Threads of which a source checkpoint or pending write is not in the
            target after the copy; empty when verified.
        refused: Source threads our tables cannot hold (a thread id or namespace over
            the limits, a NUL character, ...), each with the reason: none of their
            checkpoints was written.
    """

    threads: int = 0
    checkpoints_copied: int = 0
    checkpoints_skipped: int = 0
    writes_copied: int = 0
    mismatches: list[Mismatch] = field(default_factory=list)
    refused: list[Refused] = field(default_factory=list)


@dataclass
class Refused:
    """A source thread :func:`copy_threads` did not copy: ``thread_id`` and ``reason``."""

    thread_id: str
    reason: str


@dataclass
class ExportReport:
    """What :func:`export_threads` wrote: ``threads``, ``checkpoints``, ``writes``."""

    threads: int = 0
    checkpoints: int = 0
    writes: int = 0


@dataclass
class ImportReport:
    """What :func:`import_threads` did (same meaning as :class:`CopyReport`)."""

    threads: int = 0
    checkpoints_imported: int = 0
    checkpoints_skipped: int = 0
    writes_imported: int = 0


# -- reading a source ----------------------------------------------------------------------


T = TypeVar("T")


@dataclass
class _Tables:
    """Raw access to a source's tables, for what the saver API does not give: the thread
    list, the checkpoint keys without their values, and ``task_path``/``idx`` of writes.

    Attributes:
        run: Runs ``op(conn)`` on a connection to the source and returns its result.
        checkpoints: The checkpoints table.
        writes: The pending-writes table.
        value_column: The writes table's column of serialised values.
    """

    run: Callable[[Callable[[Connection], Any]], Any]
    checkpoints: Table
    writes: Table
    value_column: str


class Source(BaseCheckpointSaver[Any]):
    """An official saver's database opened by :func:`open_source`: reads like the saver
    it wraps (``get_tuple``, ``list``, ``serde``; the official sync savers have no async
    methods) and owns the tables, engine and kind transfer reads beside it.

    Args:
        saver: The official saver (``SqliteSaver`` or ``PostgresSaver``).
        kind: ``"sqlite"`` or ``"postgres"``.
        engine: A read-only engine on the same database.
        checkpoints: Its checkpoints table, reflected.
        writes: Its writes table, reflected.
        value_column: The writes table's column of serialised values.
    """

    def __init__(
        self,
        saver: BaseCheckpointSaver[Any],
        kind: str,
        engine: Engine,
        checkpoints: Table,
        writes: Table,
        value_column: str,
    ) -> None:
        super().__init__()
        self.saver = saver
        self.serde = saver.serde
        self.kind = kind
        self._engine = engine
        self.tables = _Tables(self._read, checkpoints, writes, value_column)

    def _read(self, op: Callable[[Connection], T]) -> T:
        with self._engine.connect() as conn:
            return op(conn)

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The wrapped saver's ``get_tuple``."""
        return self.saver.get_tuple(config)

    def list(self, config: RunnableConfig | None, **kwargs: Any) -> Iterator[CheckpointTuple]:
        """The wrapped saver's ``list`` (``filter``, ``before``, ``limit``)."""
        return self.saver.list(config, **kwargs)


def _tables_of(saver: BaseCheckpointSaver[Any]) -> _Tables | None:
    if isinstance(saver, SQLAlchemySaver):
        # Ours, through the saver's read door: missing or outdated tables are its
        # typed error.
        return _Tables(saver.run_read, our_checkpoints, our_writes, "blob")
    if isinstance(saver, Source):
        return saver.tables
    return None


class _Reader:
    """Reads threads, checkpoint keys (oldest first) and checkpoints with their writes
    from any saver: through its raw tables when known, else through ``list``."""

    def __init__(self, saver: BaseCheckpointSaver[Any]) -> None:
        self.saver = saver
        self.tables = _tables_of(saver)

    def threads(self) -> list[str]:
        if self.tables is None:
            seen = dict.fromkeys(
                str(t.config["configurable"]["thread_id"]) for t in self.saver.list(None)
            )
            return sorted(seen)
        c = self.tables.checkpoints.c

        def op(conn: Connection) -> list[str]:
            if "thread_id_full" in c:  # ours: a long id's text beside its digest key
                rows = conn.execute(
                    select(c.thread_id, func.max(c.thread_id_full)).group_by(c.thread_id)
                )
                return sorted(full_name(key, full) for key, full in rows)
            rows = conn.execute(select(c.thread_id).distinct().order_by(c.thread_id))
            return [str(r[0]) for r in rows]

        return cast(list[str], self.tables.run(op))

    def keys(self, thread_id: str) -> list[tuple[str, str]]:
        """``(checkpoint_ns, checkpoint_id)`` of a thread, oldest checkpoint first."""
        if self.tables is None:
            found = [
                (
                    str(t.config["configurable"].get("checkpoint_ns", "")),
                    str(t.config["configurable"]["checkpoint_id"]),
                )
                for t in self.saver.list(_thread_config(thread_id))
            ]
        else:
            c = self.tables.checkpoints.c
            ours = "checkpoint_ns_full" in c  # a long name's text beside its digest key
            full_ns = c.checkpoint_ns_full if ours else null()
            query = select(c.checkpoint_ns, c.checkpoint_id, full_ns).where(
                c.thread_id == thread_id
            )
            if ours and stored_full(thread_id) is not None:
                query = query.where(c.thread_id_full == thread_id)
            found = self.tables.run(
                lambda conn: [(full_name(r[0], r[2]), str(r[1])) for r in conn.execute(query)]
            )
        return sorted(found, key=lambda k: (k[1], k[0]))

    def missing(self, thread_ids: Sequence[str]) -> list[str]:
        """The ids of ``thread_ids`` that have no checkpoint here, in their order."""
        if self.tables is None:
            return [
                t
                for t in thread_ids
                if next(iter(self.saver.list(_thread_config(t), limit=1)), None) is None
            ]
        c = self.tables.checkpoints.c

        def op(conn: Connection) -> set[str]:
            found: set[str] = set()
            for batch in _batches(list(dict.fromkeys(thread_ids))):
                query = select(c.thread_id).where(c.thread_id.in_(batch)).distinct()
                found.update(str(r[0]) for r in conn.execute(query))
            return found

        found = self.tables.run(op)
        # Our tables hold a long id's digest key (schema.name_key); the official ones the id.
        key_of = name_key if "thread_id_full" in c else str
        return [t for t in thread_ids if key_of(t) not in found]

    def write_keys(self, thread_id: str, keys: Sequence[tuple[str, str]]) -> _maintenance.WriteKeys:
        """``(checkpoint_ns, checkpoint_id, task_id, channel)`` of the pending writes of
        the checkpoints ``keys`` of a thread, with their multiplicity (as
        :func:`._maintenance.held_keys` reads them from the target)."""
        wanted = set(keys)
        if self.tables is None:
            found: _maintenance.WriteKeys = Counter()
            for ns, checkpoint_id in keys:
                tup = self.saver.get_tuple(checkpoint_config(thread_id, ns, checkpoint_id))
                for task_id, channel, _ in (tup.pending_writes or []) if tup else []:
                    found[(ns, checkpoint_id, str(task_id), str(channel))] += 1
            return found
        w = self.tables.writes.c
        query = select(w.checkpoint_ns, w.checkpoint_id, w.task_id, w.channel).where(
            w.thread_id == thread_id, w.checkpoint_id.in_(sorted({k[1] for k in keys}))
        )
        ns_by_key = (
            _maintenance.ns_by_key(keys)
            if "checkpoint_ns_full" in self.tables.checkpoints.c
            else None
        )
        return cast(
            _maintenance.WriteKeys,
            self.tables.run(
                lambda conn: _maintenance.counted(conn.execute(query), wanted, ns_by_key)
            ),
        )

    def read(
        self, thread_id: str, ns: str, checkpoint_id: str
    ) -> tuple[CheckpointTuple, list[PendingWrite]]:
        tup = self.saver.get_tuple(checkpoint_config(thread_id, ns, checkpoint_id))
        if tup is None:
            raise LookupError(f"checkpoint {thread_id}/{ns!r}/{checkpoint_id} vanished")
        if self.tables is None:
            pending = [PendingWrite(t, "", ch, None, v) for t, ch, v in tup.pending_writes or []]
            return tup, pending
        w = self.tables.writes.c
        has_path = "task_path" in w
        query = select(
            w.task_id,
            w.task_path if has_path else w.task_id.label("task_path"),
            w.idx,
            w.channel,
            w.type,
            w[self.tables.value_column],
        ).where(w.thread_id == thread_id, w.checkpoint_ns == ns, w.checkpoint_id == checkpoint_id)
        rows = self.tables.run(lambda conn: conn.execute(query).all())
        serde = self.saver.serde
        pending = [
            PendingWrite(
                str(task_id),
                str(path) if has_path and path is not None else "",
                str(channel),
                int(idx),
                serde.loads_typed((str(type_), bytes(blob) if blob is not None else b"")),
            )
            for task_id, path, idx, channel, type_, blob in rows
        ]
        pending.sort(key=lambda p: (p.task_path, p.task_id, p.idx or 0))
        return tup, pending


def _thread_config(thread_id: str) -> RunnableConfig:
    return {"configurable": {"thread_id": thread_id}}


#: Checkpoints (or thread ids) per verification query: bounds memory and the size of
#: each ``IN`` list.
_BATCH = 500


def _batches(items: Sequence[Any]) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), _BATCH):
        yield items[start : start + _BATCH]


def missing_threads(saver: BaseCheckpointSaver[Any], thread_ids: Sequence[str]) -> list[str]:
    """The ids among ``thread_ids`` of threads without any checkpoint in ``saver``.

    One query per 500 ids for ours and the official savers opened by :func:`open_source`;
    one ``list(limit=1)``-like read per id for other savers.

    Args:
        saver: Ours, or a saver from :func:`open_source`, or any ``BaseCheckpointSaver``.
        thread_ids: The ids to look up.

    Returns:
        The unknown ids, in the order given (empty when every thread exists).
    """
    return _Reader(saver).missing([str(t) for t in thread_ids])


@contextmanager
def _engine(url: Any) -> Iterator[Engine]:
    # Plain engine, no WAL switch or write options: it only reads, maybe a read-only file.
    engine = create_engine(url, poolclass=NullPool)
    try:
        yield engine
    finally:
        engine.dispose()


def _reflect(engine: Engine, names: Iterable[str]) -> dict[str, Table]:
    md = MetaData()
    with engine.connect() as conn:
        return {n: Table(n, md, autoload_with=conn) for n in names}


def _detect(table_names: set[str], dialect: str, kind: SourceKind) -> str:
    found = []
    if table_names >= _OUR_TABLES:
        found.append("sqlalchemy")
    if dialect == "sqlite" and table_names >= _SQLITE_TABLES:
        found.append("sqlite")
    if dialect == "postgresql" and table_names >= _POSTGRES_TABLES:
        found.append("postgres")
    if kind != "auto":
        if kind not in found:
            raise UnknownSourceError(
                f"no tables of a {kind!r} checkpoint store found (tables present: "
                f"{', '.join(sorted(table_names)) or 'none'})."
            )
        return kind
    if not found:
        raise UnknownSourceError(
            "no checkpoint tables found: expected ours (lgsa_checkpoints, ...), an "
            "official SqliteSaver file (checkpoints, writes) or an official PostgresSaver "
            "database (checkpoints, checkpoint_blobs, checkpoint_writes); tables present: "
            f"{', '.join(sorted(table_names)) or 'none'}."
        )
    if len(found) > 1:
        raise UnknownSourceError(
            f"several checkpoint stores found ({', '.join(found)}): say which one to read "
            "(kind=..., or --from-kind on the command line)."
        )
    return found[0]


def _missing_extra(package: str, exc: ImportError) -> ImportError:
    return ImportError(
        f"reading this database needs {package}: pip install {package} (or the "
        f"'bench' extra of langgraph-checkpoint-sqlalchemy). ({exc})"
    )


@contextmanager
def open_source(
    url: str, *, kind: SourceKind = "auto", schema: str | None = None
) -> Iterator[BaseCheckpointSaver[Any]]:
    """Open a database to copy or export from, whichever saver wrote it.

    The saver is chosen from the tables present: ours (``lgsa_checkpoints``, ...) gives a
    :class:`SQLAlchemySaver`; an official SqliteSaver file (``checkpoints`` and
    ``writes`` on SQLite) a ``SqliteSaver`` on a read-only connection; an official
    PostgresSaver database (``checkpoints``, ``checkpoint_blobs``,
    ``checkpoint_writes`` on PostgreSQL) a ``PostgresSaver``; an official one comes in a
    :class:`Source`, which owns its reflected tables. The official savers are optional
    dependencies, imported only when needed. Nothing is written to the source.

    Args:
        url: Database URL or SQLite file path (as for ``SQLAlchemySaver.from_conn_string``).
        kind: ``"auto"`` (default) detects; ``"sqlalchemy"``, ``"sqlite"`` or
            ``"postgres"`` insists on one (needed when a database holds several stores).
        schema: PostgreSQL schema of our tables, when the source is ours.

    Yields:
        A saver reading the source, closed when the block exits: our
        :class:`SQLAlchemySaver`, or a :class:`Source` that reads like the official
        saver it holds (``get_tuple``, ``list``, ``serde``).

    Raises:
        UnknownSourceError: No checkpoint tables (or no such SQLite file), or several
            kinds of store and ``kind="auto"``.
        ImportError: The source needs ``langgraph-checkpoint-sqlite`` or
            ``langgraph-checkpoint-postgres``, which is not installed (the message says
            which to install).
        UnsupportedDialectError: Not a SQLite or PostgreSQL URL, nor MySQL for ours.
    """
    sync_url = resolve_urls(url).sync
    path = ""
    if sync_url.get_backend_name() == "sqlite":
        path = sync_url.database or ""
        if not path or path == ":memory:" or path.startswith("file:"):
            raise UnknownSourceError(f"{url!r}: give the path of an existing SQLite file.")
        if not os.path.isfile(path):
            raise UnknownSourceError(f"no such SQLite file: {path}")
        # Read-only, so that opening a file that is not a checkpoint store creates nothing.
        sync_url = make_url(f"sqlite:///file:{quote(path)}?mode=ro&uri=true")
    with _engine(sync_url) as engine:
        insp = inspect(engine)
        names = set(insp.get_table_names(schema=schema))
        found = _detect(names, engine.dialect.name, kind)
        if found == "sqlalchemy":
            with SQLAlchemySaver.from_conn_string(url, schema=schema) as saver:
                yield saver
            return
        if found == "sqlite":
            try:
                from langgraph.checkpoint.sqlite import SqliteSaver
            except ImportError as e:
                raise _missing_extra("langgraph-checkpoint-sqlite", e) from e

            conn = sqlite3.connect(
                f"file:{quote(path)}?mode=ro",
                uri=True,
                check_same_thread=False,
            )
            try:
                tables = _reflect(engine, ["checkpoints", "writes"])
                yield Source(
                    SqliteSaver(conn),
                    "sqlite",
                    engine,
                    tables["checkpoints"],
                    tables["writes"],
                    "value",
                )
            finally:
                conn.close()
            return
        try:
            from langgraph.checkpoint.postgres import PostgresSaver
        except ImportError as e:
            raise _missing_extra("langgraph-checkpoint-postgres", e) from e
        libpq = sync_url.set(drivername="postgresql").render_as_string(hide_password=False)
        with PostgresSaver.from_conn_string(libpq) as pg_saver:
            tables = _reflect(engine, ["checkpoints", "checkpoint_writes"])
            yield Source(
                pg_saver,
                "postgres",
                engine,
                tables["checkpoints"],
                tables["checkpoint_writes"],
                "blob",
            )


# -- writing to our saver ---------------------------------------------------------------


def _verify(
    reader: _Reader, target: SQLAlchemySaver, thread_id: str, keys: Sequence[tuple[str, str]]
) -> Mismatch | None:
    """Check that every checkpoint of ``keys`` and each of its pending writes is in the
    target, by key, 500 checkpoints at a time. Extra checkpoints or writes in the target
    (a thread that moved on after an earlier copy) are fine."""
    missing_checkpoints = missing_writes = 0
    first = ""
    for batch in _batches(keys):
        present, target_writes = target.run_read(_maintenance.held_keys, thread_id, batch)
        source_writes = reader.write_keys(thread_id, batch)
        lacking = {(k[0], k[1]) for k, n in source_writes.items() if target_writes[k] < n}
        for key in batch:
            absent = key not in present
            missing_checkpoints += absent
            if (absent or key in lacking) and not first:
                first = f"{key[0]}/{key[1]}"
        missing_writes += sum(max(0, n - target_writes[k]) for k, n in source_writes.items())
    if missing_checkpoints or missing_writes:
        return Mismatch(thread_id, len(keys), missing_checkpoints, missing_writes, first)
    return None


def _store(
    target: SQLAlchemySaver,
    thread_id: str,
    checkpoint_ns: str,
    parent_id: str | None,
    checkpoint: Checkpoint,
    metadata: CheckpointMetadata,
    pending: Sequence[PendingWrite],
) -> None:
    """Store a checkpoint and its pending writes in one transaction, writes first
    (:meth:`.SQLAlchemySaver.put_with_writes`).

    ``new_versions`` is the checkpoint's channel versions of the channels it holds a
    value for; blobs are first-write-wins, so values shared with the parent are not
    duplicated. Writes keep their ``idx`` when the source gave it and are
    first-write-wins, so storing them again is harmless.
    """
    parent: dict[str, Any] = {"thread_id": thread_id, "checkpoint_ns": checkpoint_ns}
    if parent_id:
        parent["checkpoint_id"] = parent_id
    values = checkpoint.get("channel_values") or {}
    new_versions = {
        ch: v for ch, v in checkpoint.get("channel_versions", {}).items() if ch in values
    }
    config = cast(RunnableConfig, {"configurable": parent})
    target.put_with_writes(config, checkpoint, metadata, new_versions, pending)


# -- copy ---------------------------------------------------------------------------------


def _chosen_threads(reader: _Reader, thread_ids: Sequence[str] | None) -> list[str]:
    if thread_ids is None:
        return reader.threads()
    if isinstance(thread_ids, (str, bytes)):
        raise TypeError(f"thread_ids must be a list of ids, not a single string: [{thread_ids!r}]")
    return list(dict.fromkeys(str(t) for t in thread_ids))


def count_checkpoints(
    source: BaseCheckpointSaver[Any], thread_ids: Sequence[str] | None = None
) -> int:
    """Checkpoints of the chosen threads (None: all) in ``source``, every namespace: the
    total for a progress bar of :func:`copy_threads`."""
    reader = _Reader(source)
    return sum(len(reader.keys(t)) for t in _chosen_threads(reader, thread_ids))


def copy_threads(
    source: BaseCheckpointSaver[Any],
    target: SQLAlchemySaver,
    thread_ids: Sequence[str] | None = None,
    *,
    progress: Callable[[int], None] | None = None,
) -> CopyReport:
    """Copy threads, every checkpoint of every namespace, from any saver into ours.

    Checkpoint ids, parent ids, metadata, namespaces and pending writes (with
    ``task_id``, and ``task_path`` and ``idx`` when the source stores them) are kept;
    checkpoints go oldest first. Each checkpoint and its writes are one transaction in
    the target. Checkpoints the target already has (same thread_id, checkpoint_ns,
    checkpoint_id) are skipped, so running the copy again after an interruption finishes
    it without duplicates. At the end each thread is verified by key, 500 checkpoints a
    query: every checkpoint of the source and each of its pending writes (by task and
    channel) must be in the target; more in the target (a thread that moved on since an
    earlier copy) is fine.

    Args:
        source: The saver to read (see :func:`open_source`); any ``BaseCheckpointSaver``
            works, through ``list``/``get_tuple`` when its tables are unknown.
        target: Our saver, set up (``setup()``).
        thread_ids: Threads to copy; None copies all.
        progress: Called after each checkpoint (copied or skipped) with the number of
            checkpoints handled so far. An exception it raises stops the copy (already
            stored checkpoints stay; re-run to finish).

    Returns:
        The report; ``mismatches`` lists threads failing verification and ``refused``
        the threads whose thread id or a namespace our tables cannot hold, checked before
        any of the thread's checkpoints is written (nothing is raised for either: the
        other threads are copied).

    Raises:
        TypeError: ``thread_ids`` is a bare string.
        CheckpointConfigError: A checkpoint id or channel name unfit for our tables (the
            thread's checkpoints before it are stored; re-run after fixing the source).
    """
    reader = _Reader(source)
    threads = _chosen_threads(reader, thread_ids)
    report = CopyReport()
    handled = 0
    for thread_id in threads:
        keys = reader.keys(thread_id)
        reason = _unfit(thread_id, keys)
        if reason is not None:
            report.refused.append(Refused(thread_id, reason))
            continue
        report.threads += 1
        existing = target.run_read(_maintenance.checkpoint_keys, thread_id)
        for ns, checkpoint_id in keys:
            if (ns, checkpoint_id) in existing:
                report.checkpoints_skipped += 1
            else:
                tup, pending = reader.read(thread_id, ns, checkpoint_id)
                parent = (tup.parent_config or {}).get("configurable", {}).get("checkpoint_id")
                _store(target, thread_id, ns, parent, tup.checkpoint, tup.metadata, pending)
                report.checkpoints_copied += 1
                report.writes_copied += len(pending)
            handled += 1
            if progress is not None:
                progress(handled)
        mismatch = _verify(reader, target, thread_id, keys)
        if mismatch is not None:
            report.mismatches.append(mismatch)
    return report


def _unfit(thread_id: str, keys: Sequence[tuple[str, str]]) -> str | None:
    """Why our tables cannot hold a thread with these ids (the saver's own checks on
    thread ids and namespaces), or None."""
    try:
        thread(thread_id)
        for ns in {ns for ns, _ in keys}:
            namespace(ns)
    except CheckpointConfigError as e:
        return str(e)
    return None


# -- export / import ------------------------------------------------------------------------


def _encode(serde: SerializerProtocol, value: Any) -> dict[str, str]:
    type_, data = serde.dumps_typed(value)
    return {"type": type_, "data": base64.b64encode(data or b"").decode("ascii")}


def _decode(serde: SerializerProtocol, doc: Any) -> Any:
    if not isinstance(doc, dict) or not isinstance(doc.get("type"), str):
        raise ValueError("a value must be {'type': str, 'data': base64}")
    data = base64.b64decode(str(doc.get("data", "")), validate=True)
    return serde.loads_typed((doc["type"], data))


def export_threads(
    saver: BaseCheckpointSaver[Any], thread_ids: Sequence[str] | None, fp: IO[str]
) -> ExportReport:
    """Write threads to a JSON lines file that :func:`import_threads` reads back.

    The first line is ``{"format": "langgraph-checkpoint-sqlalchemy/jsonl", "version":
    1}``; then one line per checkpoint, oldest first, each ``{"thread_id",
    "checkpoint_ns", "checkpoint_id", "parent_checkpoint_id", "metadata", "checkpoint",
    "pending_writes"}``. ``metadata`` is JSON; ``checkpoint`` (with its channel values)
    and each write's ``value`` are ``{"type": ..., "data": base64}``, the output of the
    saver's ``serde.dumps_typed`` as is: with an ``EncryptedSerializer`` they stay
    encrypted, and the importing saver needs the same key. ``pending_writes`` is a list
    of ``{"task_id", "task_path", "channel", "idx", "value"}`` (``idx`` null when the
    source does not store it).

    Args:
        saver: The saver to read (ours, or one from :func:`open_source`).
        thread_ids: Threads to export; None exports all.
        fp: A text file open for writing.

    Returns:
        Counts of what was written.
    """
    reader = _Reader(saver)
    threads = _chosen_threads(reader, thread_ids)
    report = ExportReport(threads=len(threads))
    serde = saver.serde
    fp.write(json.dumps({"format": EXPORT_FORMAT, "version": EXPORT_VERSION}) + "\n")
    for thread_id in threads:
        for ns, checkpoint_id in reader.keys(thread_id):
            tup, pending = reader.read(thread_id, ns, checkpoint_id)
            parent = (tup.parent_config or {}).get("configurable", {}).get("checkpoint_id")
            record = {
                "thread_id": thread_id,
                "checkpoint_ns": ns,
                "checkpoint_id": checkpoint_id,
                "parent_checkpoint_id": parent,
                "metadata": tup.metadata,
                "checkpoint": _encode(serde, tup.checkpoint),
                "pending_writes": [
                    {
                        "task_id": w.task_id,
                        "task_path": w.task_path,
                        "channel": w.channel,
                        "idx": w.idx,
                        "value": _encode(serde, w.value),
                    }
                    for w in pending
                ],
            }
            fp.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")
            report.checkpoints += 1
            report.writes += len(pending)
    return report


def _text_lines(fp: IO[str]) -> Iterator[tuple[str, int]]:
    """``(line, number)`` of a text file; a file that is not text (not UTF-8) is an
    :class:`ExportFormatError` naming the line, not a ``UnicodeDecodeError``."""
    number = 1
    while True:
        try:
            line = fp.readline()
        except UnicodeDecodeError as e:
            raise ExportFormatError(
                f"line {number}: not UTF-8 text ({e.reason}): not an export of "
                "langgraph-checkpoint-sqlalchemy"
            ) from None
        if not line:
            return
        yield line, number
        number += 1


def _check_header(line: str) -> None:
    try:
        header = json.loads(line) if line.strip() else None
    except json.JSONDecodeError:
        header = None
    if not isinstance(header, dict) or "format" not in header:
        raise ExportFormatError(
            f"line 1: not an export of langgraph-checkpoint-sqlalchemy (expected a first "
            f'line {{"format": "{EXPORT_FORMAT}", "version": {EXPORT_VERSION}}}).'
        )
    if header.get("format") != EXPORT_FORMAT:
        raise ExportFormatError(
            f"line 1: unknown export format {header.get('format')!r}; expected {EXPORT_FORMAT!r}."
        )
    if header.get("version") != EXPORT_VERSION:
        raise ExportFormatError(
            f"line 1: export version {header.get('version')!r} is not supported by this "
            f"version of langgraph-checkpoint-sqlalchemy (it reads version {EXPORT_VERSION})."
        )


def _parse_record(serde: SerializerProtocol, line: str, number: int) -> tuple[Any, ...]:
    try:
        rec = json.loads(line)
        thread_id = rec["thread_id"]
        ns = rec["checkpoint_ns"]
        checkpoint_id = rec["checkpoint_id"]
        parent = rec.get("parent_checkpoint_id")
        metadata = rec["metadata"]
        if not all(isinstance(v, str) for v in (thread_id, ns, checkpoint_id)):
            raise ValueError("thread_id, checkpoint_ns and checkpoint_id must be strings")
        if parent is not None and not isinstance(parent, str):
            raise ValueError("parent_checkpoint_id must be a string or null")
        if not isinstance(metadata, dict):
            raise ValueError("metadata must be an object")
        checkpoint = _decode(serde, rec["checkpoint"])
        if not isinstance(checkpoint, dict) or checkpoint.get("id") != checkpoint_id:
            raise ValueError("checkpoint does not decode to the checkpoint named by the line")
        pending = [
            PendingWrite(
                str(w["task_id"]),
                str(w.get("task_path") or ""),
                str(w["channel"]),
                None if w.get("idx") is None else int(w["idx"]),
                _decode(serde, w["value"]),
            )
            for w in rec.get("pending_writes") or []
        ]
    except (KeyError, TypeError, ValueError, binascii.Error) as e:
        detail = f"missing field {e}" if isinstance(e, KeyError) else str(e)
        raise ExportFormatError(f"line {number}: not a checkpoint record ({detail}).") from e
    return thread_id, ns, checkpoint_id, parent, metadata, checkpoint, pending


def import_threads(saver: SQLAlchemySaver, fp: IO[str]) -> ImportReport:
    """Read a file written by :func:`export_threads` into our saver.

    Idempotent like :func:`copy_threads`: checkpoints the saver already has are skipped,
    each checkpoint is stored with its writes in one transaction. Values are decoded with
    the saver's ``serde`` (which must read what the exporting saver's wrote) and stored
    again through it; ``new_versions`` is the checkpoint's channel versions of the
    channels it holds a value for.

    Args:
        saver: Our saver, set up.
        fp: A text file open for reading.

    Returns:
        Counts of what was imported and skipped.

    Raises:
        ExportFormatError: Not an export file, an unknown format or version, or a bad
            line (checkpoints before that line are imported).
    """
    lines = _text_lines(fp)
    _check_header(next(lines, ("", 1))[0])
    report = ImportReport()
    existing: dict[str, set[tuple[str, str]]] = {}
    for line, number in lines:
        if not line.strip():
            continue
        thread_id, ns, checkpoint_id, parent, metadata, checkpoint, pending = _parse_record(
            saver.serde, line, number
        )
        if thread_id not in existing:
            existing[thread_id] = saver.run_read(_maintenance.checkpoint_keys, thread_id)
            report.threads += 1
        if (ns, checkpoint_id) in existing[thread_id]:
            report.checkpoints_skipped += 1
            continue
        _store(saver, thread_id, ns, parent, checkpoint, metadata, pending)
        existing[thread_id].add((ns, checkpoint_id))
        report.checkpoints_imported += 1
        report.writes_imported += len(pending)
    return report
