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

import io
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import IO, Any, cast

from langgraph.checkpoint.base import BaseCheckpointSaver

from . import _jsonl, _maintenance
from ._jsonl import EXPORT_FORMAT, EXPORT_VERSION
from ._sources import Reader, SourceKind, opaque_view, open_saver
from ._sources import Source as Source  # what open_source yields (documented with this module)
from ._writing import refuse_existing, source_errors, store, unfit, verify
from .errors import (
    ExportFormatError,
    UnknownSourceError,
)
from .saver import SQLAlchemySaver

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
    "import_plan",
    "import_threads",
    "missing_threads",
    "open_source",
]


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
    """What :func:`import_threads` did (same meaning as :class:`CopyReport`);
    ``thread_ids`` lists the threads it was to write (the file's, or those chosen)."""

    thread_ids: list[str] = field(default_factory=list)
    threads: int = 0
    checkpoints_imported: int = 0
    checkpoints_skipped: int = 0
    writes_imported: int = 0


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
    return Reader(saver).missing([str(t) for t in thread_ids])


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
    with open_saver(url, kind=kind, schema=schema) as saver:
        yield saver


# -- writing to our saver ---------------------------------------------------------------


# -- copy ---------------------------------------------------------------------------------


def _chosen_ids(thread_ids: Sequence[str]) -> list[str]:
    if isinstance(thread_ids, (str, bytes)):
        raise TypeError(f"thread_ids must be a list of ids, not a single string: [{thread_ids!r}]")
    return list(dict.fromkeys(str(t) for t in thread_ids))


def _chosen_threads(reader: Reader, thread_ids: Sequence[str] | None) -> list[str]:
    return reader.threads() if thread_ids is None else _chosen_ids(thread_ids)


def count_checkpoints(
    source: BaseCheckpointSaver[Any], thread_ids: Sequence[str] | None = None
) -> int:
    """Checkpoints of the chosen threads (None: all) in ``source``, every namespace: the
    total for a progress bar of :func:`copy_threads`."""
    reader = Reader(source)
    return sum(len(reader.keys(t)) for t in _chosen_threads(reader, thread_ids))


def copy_threads(
    source: BaseCheckpointSaver[Any],
    target: SQLAlchemySaver,
    thread_ids: Sequence[str] | None = None,
    *,
    progress: Callable[[int], None] | None = None,
    into_existing: bool = False,
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
        into_existing: Allow writing into target threads that already have checkpoints
            (re-running an interrupted copy). Without it such threads are refused before
            anything is written: a source handed to the operator could otherwise plant a
            new latest checkpoint in a live thread.

    Returns:
        The report; ``mismatches`` lists threads failing verification and ``refused``
        the threads whose thread id or a namespace our tables cannot hold, checked before
        any of the thread's checkpoints is written (nothing is raised for either: the
        other threads are copied).

    Raises:
        TypeError: ``thread_ids`` is a bare string.
        ThreadNotEmptyError: Some threads already have checkpoints in the target and
            ``into_existing`` is False; nothing was written.
        CheckpointConfigError: A checkpoint id or channel name unfit for our tables (the
            thread's checkpoints before it are stored; re-run after fixing the source).
        CheckpointDecodeError: A source checkpoint that cannot be read or written back
            as stored (a damaged row); the checkpoints before it are stored.
    """
    reader = Reader(source)
    # Values read as data are written back as stored; a saver of unknown tables hands
    # back rebuilt objects, which the target's own serializer writes.
    writer = cast(SQLAlchemySaver, opaque_view(target)) if reader.opaque else target
    threads = _chosen_threads(reader, thread_ids)
    if not into_existing:
        refuse_existing(target, threads, "copied")
    report = CopyReport()
    handled = 0
    for thread_id in threads:
        keys = reader.keys(thread_id)
        reason = unfit(thread_id, keys)
        if reason is not None:
            report.refused.append(Refused(thread_id, reason))
            continue
        report.threads += 1
        existing = target.run_read(_maintenance.checkpoint_keys, thread_id)
        for ns, checkpoint_id in keys:
            if (ns, checkpoint_id) in existing:
                report.checkpoints_skipped += 1
            else:
                with source_errors(thread_id, ns, checkpoint_id):
                    tup, pending = reader.read(thread_id, ns, checkpoint_id)
                    parent = (tup.parent_config or {}).get("configurable", {})
                    parent_id = parent.get("checkpoint_id")
                    store(writer, thread_id, ns, parent_id, tup.checkpoint, tup.metadata, pending)
                report.checkpoints_copied += 1
                report.writes_copied += len(pending)
            handled += 1
            if progress is not None:
                progress(handled)
        missing = verify(reader, target, thread_id, keys)
        if missing is not None:
            report.mismatches.append(Mismatch(thread_id, len(keys), *missing))
    return report


# -- export / import ------------------------------------------------------------------------


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
    reader = Reader(saver)
    serde = reader.saver.serde
    threads = _chosen_threads(reader, thread_ids)
    report = ExportReport(threads=len(threads))
    fp.write(_jsonl.header_line())
    for thread_id in threads:
        for ns, checkpoint_id in reader.keys(thread_id):
            with source_errors(thread_id, ns, checkpoint_id):
                tup, pending = reader.read(thread_id, ns, checkpoint_id)
                line = _jsonl.record_line(serde, thread_id, ns, checkpoint_id, tup, pending)
            fp.write(line)
            report.checkpoints += 1
            report.writes += len(pending)
    return report


def import_plan(fp: IO[str]) -> dict[str, int]:
    """The threads an export file holds and their checkpoint counts, in file order,
    read without decoding any value; the file is left at its start.

    Args:
        fp: A text file open for reading (read into memory first when it cannot seek).

    Returns:
        ``{thread_id: checkpoints}``.

    Raises:
        ExportFormatError: Not an export file, or a line without a string ``thread_id``.
    """
    lines = _jsonl.text_lines(fp)
    _jsonl.check_header(next(lines, ("", 1))[0])
    found: dict[str, int] = {}
    for line, number in lines:
        if line.strip():
            thread_id = _jsonl.record_thread(line, number)
            found[thread_id] = found.get(thread_id, 0) + 1
    fp.seek(0)
    return found


def import_threads(
    saver: SQLAlchemySaver,
    fp: IO[str],
    *,
    thread_ids: Sequence[str] | None = None,
    into_existing: bool = False,
) -> ImportReport:
    """Read a file written by :func:`export_threads` into our saver.

    Explicit about what it touches: the file is read once for its threads
    (:func:`import_plan`) before anything is written; a thread that already has
    checkpoints in the saver is written to only with ``into_existing`` (a crafted file
    could otherwise plant a new latest checkpoint in a live thread). Values move as they
    are stored in the file, as data: nothing in the file is imported, called or
    unpickled (:mod:`._opaque`), and an encrypted file stays readable only with its key.
    Each checkpoint is stored with its writes in one transaction; checkpoints the saver
    already has are skipped, so an interrupted import is finished by running it again
    (with ``into_existing``).

    Args:
        saver: Our saver, set up.
        fp: A text file open for reading (read into memory when it cannot seek).
        thread_ids: Import only these threads (None: every thread of the file).
        into_existing: Allow writing into threads that already have checkpoints.

    Returns:
        Counts of what was imported and skipped, and the threads written.

    Raises:
        ExportFormatError: Not an export file, an unknown format or version, or a bad
            line (checkpoints before that line are imported).
        ThreadNotEmptyError: Some threads of the file already exist in the saver and
            ``into_existing`` is False; nothing was written.
        LookupError: A thread of ``thread_ids`` is not in the file; nothing was written.
    """
    if not fp.seekable():
        fp = io.StringIO(fp.read())
    plan = import_plan(fp)
    if thread_ids is not None:
        wanted = list(dict.fromkeys(str(t) for t in _chosen_ids(thread_ids)))
        absent = [t for t in wanted if t not in plan]
        if absent:
            raise LookupError(f"not in the file: {', '.join(map(repr, absent))}")
        plan = {t: plan[t] for t in wanted}
    if not into_existing:
        refuse_existing(saver, list(plan), "imported")
    writer = cast(SQLAlchemySaver, opaque_view(saver))
    lines = _jsonl.text_lines(fp)
    next(lines, None)  # the header, checked by import_plan
    report = ImportReport(thread_ids=list(plan))
    existing_keys: dict[str, set[tuple[str, str]]] = {}
    chosen = thread_ids is not None  # else every line's thread is in the plan
    for line, number in lines:
        if not line.strip() or (chosen and _jsonl.record_thread(line, number) not in plan):
            continue
        record = _jsonl.parse_record(writer.serde, line, number)
        thread_id, ns, checkpoint_id, parent, metadata, checkpoint, pending = record
        if thread_id not in existing_keys:
            existing_keys[thread_id] = saver.run_read(_maintenance.checkpoint_keys, thread_id)
            report.threads += 1
        if (ns, checkpoint_id) in existing_keys[thread_id]:
            report.checkpoints_skipped += 1
            continue
        with source_errors(thread_id, ns, checkpoint_id):
            store(writer, thread_id, ns, parent, checkpoint, metadata, pending)
        existing_keys[thread_id].add((ns, checkpoint_id))
        report.checkpoints_imported += 1
        report.writes_imported += len(pending)
    return report
