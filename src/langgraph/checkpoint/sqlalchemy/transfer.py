"""Move checkpoints between databases: copy from the official savers, export and import.

* :func:`open_source` opens a database to read from: ours (tables ``lgsa_*``), an
  official ``SqliteSaver`` file (langgraph-checkpoint-sqlite: tables ``checkpoints``,
  ``writes``) or an official ``PostgresSaver`` database (langgraph-checkpoint-postgres:
  ``checkpoints``, ``checkpoint_blobs``, ``checkpoint_writes``), told apart by the tables
  present. An official store opens as a :class:`Source`: the official saver, with the
  tables and engine transfer reads beside it (our saver reads its own tables).
* :func:`copy_threads` copies every checkpoint of every namespace of some threads, with
  their ids, parents, metadata and pending writes, into a :class:`SQLAlchemySaver`. It is
  resumable: a thread the target holds whole is skipped, so an interrupted copy is
  finished by running it again.
* :func:`export_threads` / :func:`import_threads` write and read a versioned JSON lines
  file, portable between our databases, which ends with a line counting what it holds:
  a file without it (an interrupted export) is refused before anything is written.

Each thread is stored in the target in one transaction, every checkpoint with its
pending writes (:meth:`.SQLAlchemySaver.put_all_with_writes`): an interrupted copy or
import leaves each thread whole or absent, never an older state that looks like the
latest (:class:`Interrupted` says how far it went).
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import IO, Any, cast

from langgraph.checkpoint.base import BaseCheckpointSaver

from langgraph.checkpoint.sqlalchemy._transfer import exportfile as _exportfile
from langgraph.checkpoint.sqlalchemy._transfer import held as _held
from langgraph.checkpoint.sqlalchemy._transfer import jsonl as _jsonl
from langgraph.checkpoint.sqlalchemy._transfer.jsonl import EXPORT_FORMAT, EXPORT_VERSION
from langgraph.checkpoint.sqlalchemy._transfer.sources import (
    Reader,
    SourceKind,
    opaque_view,
    open_saver,
)
from langgraph.checkpoint.sqlalchemy._transfer.sources import (
    Source as Source,  # what open_source yields (documented with this module)
)
from langgraph.checkpoint.sqlalchemy._transfer.writing import (
    counted,
    refuse_existing,
    source_entries,
    source_errors,
    store_thread,
    unfit,
    verify,
)
from langgraph.checkpoint.sqlalchemy.errors import (
    ExportFormatError,
    IncompleteExportError,
    UnknownSourceError,
)
from langgraph.checkpoint.sqlalchemy.saver import SQLAlchemySaver

__all__ = [
    "EXPORT_FORMAT",
    "EXPORT_VERSION",
    "CopyReport",
    "ExportFormatError",
    "ExportReport",
    "ImportReport",
    "IncompleteExportError",
    "Interrupted",
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
    """What :func:`import_threads` did (same meaning as :class:`CopyReport`).

    Attributes:
        thread_ids: The threads it was to write (the file's, or those chosen).
        threads: Threads written (or found whole in the target).
        checkpoints_imported: Checkpoints written.
        checkpoints_skipped: Checkpoints the target already had.
        writes_imported: Pending writes stored with the written checkpoints.
        whole_file: The file ended with its end line and its counts agreed (False only
            with ``allow_incomplete``).
        left_out: With ``allow_incomplete``, the thread the file ends inside of: not
            imported (a version 3 file, or one that ends in the middle of a line).
    """

    thread_ids: list[str] = field(default_factory=list)
    threads: int = 0
    checkpoints_imported: int = 0
    checkpoints_skipped: int = 0
    writes_imported: int = 0
    whole_file: bool = True
    left_out: list[str] = field(default_factory=list)


class Interrupted(KeyboardInterrupt):
    """:func:`copy_threads` or :func:`import_threads` stopped by ``KeyboardInterrupt``
    (Ctrl-C; the CLI makes SIGTERM one too). Each thread is written in one transaction:
    the threads done are in the target whole, the one being written was rolled back,
    and the others were not touched. The same call again finishes the work: it skips
    the threads the target holds whole.

    Attributes:
        report: What was done before the interruption (a :class:`CopyReport` or an
            :class:`ImportReport`).
        total: The threads the call was to write.
        thread_id: The thread being written, of which nothing was stored; None when the
            interruption came between two threads.
    """

    def __init__(self, report: CopyReport | ImportReport, total: int, thread_id: str | None):
        super().__init__(f"interrupted after {report.threads} of {total} threads")
        self.report = report
        self.total = total
        self.thread_id = thread_id


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
    total for a progress bar of :func:`copy_threads` and :func:`export_threads`."""
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
    checkpoints go oldest first. Each thread is one transaction in the target, however
    many checkpoints it has (read from the source one at a time inside it): an
    interrupted copy leaves it whole or absent. Checkpoints the target already has (same
    thread_id, checkpoint_ns, checkpoint_id) are skipped, so running the copy again
    after an interruption finishes it without duplicates. At the end each thread is
    verified by key, 500 checkpoints a query: every checkpoint of the source and each of
    its pending writes (by task and channel) must be in the target; more in the target
    (a thread that moved on since an earlier copy) is fine.

    Args:
        source: The saver to read (see :func:`open_source`); any ``BaseCheckpointSaver``
            works, through ``list``/``get_tuple`` when its tables are unknown.
        target: Our saver, set up (``setup()``).
        thread_ids: Threads to copy; None copies all.
        progress: Called after each checkpoint (copied or skipped) with the number of
            checkpoints handled so far, inside the thread's transaction. An exception it
            raises stops the copy and rolls the thread back (the threads before it stay;
            run the copy again to finish).
        into_existing: Allow writing into target threads that already have some
            checkpoints but not all of the source's. Without it such threads are refused
            before anything is written (a source handed to the operator could otherwise
            plant a new latest checkpoint in a live thread); threads the target holds
            whole (an interrupted copy's) are skipped either way.

    Returns:
        The report; ``mismatches`` lists threads failing verification and ``refused``
        the threads whose thread id or a namespace our tables cannot hold, checked before
        any of the thread's checkpoints is written (nothing is raised for either: the
        other threads are copied).

    Raises:
        TypeError: ``thread_ids`` is a bare string.
        ThreadNotEmptyError: Some threads have checkpoints in the target, not all of the
            source's, and ``into_existing`` is False; nothing was written.
        Interrupted: A ``KeyboardInterrupt``, with what was done.
        CheckpointConfigError: A checkpoint id or channel name unfit for our tables
            (nothing of that thread is stored; the threads before it are).
        CheckpointDecodeError: A source checkpoint that cannot be read or written back
            as stored (a damaged row); nothing of its thread is stored.
    """
    reader = Reader(source)
    # Values read as data are written back as stored; a saver of unknown tables hands
    # back rebuilt objects, which the target's own serializer writes.
    writer = cast(SQLAlchemySaver, opaque_view(target)) if reader.opaque else target
    threads = _chosen_threads(reader, thread_ids)
    if not into_existing:
        refuse_existing(target, threads, "copied", reader.keys)
    report = CopyReport()
    handled = 0
    current: str | None = None
    try:
        for thread_id in threads:
            keys = reader.keys(thread_id)
            reason = unfit(thread_id, keys)
            if reason is not None:
                report.refused.append(Refused(thread_id, reason))
                continue
            existing = target.run_read(_held.checkpoint_keys, thread_id)
            todo = [k for k in keys if k not in existing]
            handled += len(keys) - len(todo)
            if progress is not None and len(todo) < len(keys):
                progress(handled)
            if todo:
                current = thread_id
                entries = source_entries(reader, thread_id, todo, progress, handled)
                copied, writes = store_thread(writer, thread_id, entries)
                current = None
                report.checkpoints_copied += copied
                report.writes_copied += writes
                handled += len(todo)
            report.threads += 1
            report.checkpoints_skipped += len(keys) - len(todo)
            missing = verify(reader, target, thread_id, keys)
            if missing is not None:
                report.mismatches.append(Mismatch(thread_id, len(keys), *missing))
    except KeyboardInterrupt as e:
        raise Interrupted(report, len(threads), current) from e
    return report


# -- export / import ------------------------------------------------------------------------


def export_threads(
    saver: BaseCheckpointSaver[Any],
    thread_ids: Sequence[str] | None,
    fp: IO[str],
    *,
    progress: Callable[[int], None] | None = None,
) -> ExportReport:
    """Write threads to a JSON lines file that :func:`import_threads` reads back.

    The first line is ``{"format": "langgraph-checkpoint-sqlalchemy/jsonl", "version":
    3}``; then, thread after thread, one line per checkpoint, oldest first, each
    ``{"thread_id", "checkpoint_ns", "checkpoint_id", "parent_checkpoint_id",
    "metadata", "checkpoint", "channel_values", "pending_writes"}``, and after a
    thread's last checkpoint ``{"end_of_thread": thread_id, "checkpoints": n, "writes":
    n}``. The last line, written once everything else is, is ``{"end_of_export":
    "langgraph-checkpoint-sqlalchemy/jsonl", "threads": n, "checkpoints": n, "writes":
    n}``: a file without it is an interrupted export, which :func:`import_threads`
    refuses. ``metadata`` is JSON; ``checkpoint`` (the document without its channel
    values), each of ``channel_values`` and each write's ``value`` are ``{"type": ...,
    "data": base64}``, the output of the saver's ``serde.dumps_typed`` as is: with an
    ``EncryptedSerializer`` they stay encrypted, and the importing saver needs the same
    key. ``pending_writes`` is a list of ``{"task_id", "task_path", "channel", "idx",
    "value"}`` (``idx`` null when the source does not store it).

    Args:
        saver: The saver to read (ours, or one from :func:`open_source`).
        thread_ids: Threads to export; None exports all.
        fp: A text file open for writing. Written as it goes: write to a temporary
            file and rename it at the end (as the CLI does) so that an interrupted
            export is never found under the final name.
        progress: Called after each checkpoint is written with the number written so
            far (the total: :func:`count_checkpoints`). An exception it raises stops the
            export where it is (the file then has no end line).

    Returns:
        Counts of what was written (a thread without checkpoints is not).
    """
    reader = Reader(saver)
    serde = reader.saver.serde
    report = ExportReport()
    fp.write(_jsonl.header_line())
    for thread_id in _chosen_threads(reader, thread_ids):
        checkpoints = writes = 0
        for ns, checkpoint_id in reader.keys(thread_id):
            with source_errors(thread_id, ns, checkpoint_id):
                tup, pending = reader.read(thread_id, ns, checkpoint_id)
                line = _jsonl.record_line(serde, thread_id, ns, checkpoint_id, tup, pending)
            fp.write(line)
            checkpoints += 1
            writes += len(pending)
            if progress is not None:
                progress(report.checkpoints + checkpoints)
        if checkpoints:
            fp.write(_jsonl.thread_end_line(thread_id, checkpoints, writes))
            report.threads += 1
            report.checkpoints += checkpoints
            report.writes += writes
    fp.write(_jsonl.export_end_line(report.threads, report.checkpoints, report.writes))
    return report


def import_plan(fp: IO[str], *, allow_incomplete: bool = False) -> dict[str, int]:
    """The threads an export file holds and their checkpoint counts, in file order,
    read without decoding any value, once the file is checked whole (as
    :func:`import_threads` checks it); the file is left at its start.

    Args:
        fp: A text file open for reading (read into memory first when it cannot seek).
        allow_incomplete: As for :func:`import_threads`.

    Returns:
        ``{thread_id: checkpoints}``.

    Raises:
        ExportFormatError: Not an export file, or a line without a string ``thread_id``.
        IncompleteExportError: The file cannot be proved whole.
    """
    contents = _exportfile.scan(fp, None, allow_incomplete=allow_incomplete)
    fp.seek(0)
    return {p.thread_id: p.checkpoints for p in contents.parts}


def import_threads(
    saver: SQLAlchemySaver,
    fp: IO[str],
    *,
    thread_ids: Sequence[str] | None = None,
    into_existing: bool = False,
    allow_incomplete: bool = False,
    progress: Callable[[int], None] | None = None,
) -> ImportReport:
    """Read a file written by :func:`export_threads` into our saver.

    The whole file is read and checked first, every line decoded as it will be
    imported: a file that does not end with its end line (an interrupted export, a cut
    file), whose counts disagree with its lines, or with a line that is not a record is
    refused before anything is written. Then each thread is stored in one transaction,
    every checkpoint with its pending writes (the file is read a second time): an
    interrupted import leaves each thread whole or absent. A thread that already has
    some checkpoints in the saver, but not all of the file's, is written to only with
    ``into_existing`` (a crafted file could otherwise plant a new latest checkpoint in a
    live thread); one the saver holds whole is skipped, so the same import again
    finishes an interrupted one. Values move as they are stored in the file, as data:
    nothing in the file is imported, called or unpickled (docs/security.md), and an
    encrypted file stays readable only with its key.

    Args:
        saver: Our saver, set up.
        fp: A text file open for reading (read into memory when it cannot seek).
        thread_ids: Import only these threads (None: every thread of the file).
        into_existing: Allow writing into threads that already have checkpoints.
        allow_incomplete: Import a file that cannot be proved whole: one without its
            end line (the thread it ends inside of is left out, see
            :attr:`ImportReport.left_out`), or of version 1 or 2, which have no end line
            (each thread is imported as the file holds it: its last one may lack
            checkpoints). Counts that disagree are refused even so.
        progress: Called while the threads are written (after the file is checked) with
            the number of the file's checkpoints handled so far, stored or skipped as
            already there (the total: the sum of :func:`import_plan`'s counts of the
            threads imported), inside each thread's transaction. An exception it raises
            stops the import and rolls that thread back (as an interruption does).

    Returns:
        Counts of what was imported and skipped, and the threads written.

    Raises:
        ExportFormatError: Not an export file, an unknown format or version, or a bad
            line; nothing was written.
        IncompleteExportError: An :class:`ExportFormatError`: the file cannot be
            proved whole (see ``allow_incomplete``); nothing was written.
        ThreadNotEmptyError: Some threads of the file have checkpoints in the saver, not
            all of the file's, and ``into_existing`` is False; nothing was written.
        LookupError: A thread of ``thread_ids`` is not in the file; nothing was written.
        Interrupted: A ``KeyboardInterrupt``, with what was done.
    """
    if not fp.seekable():
        fp = io.StringIO(fp.read())
    writer = cast(SQLAlchemySaver, opaque_view(saver))
    contents = _exportfile.scan(fp, writer.serde, allow_incomplete=allow_incomplete)
    parts = {p.thread_id: p for p in contents.parts}
    if thread_ids is not None:
        wanted = _chosen_ids(thread_ids)
        absent = [t for t in wanted if t not in parts]
        if absent:
            cut = f" (the file ends inside {contents.cut!r})" if contents.cut in absent else ""
            raise LookupError(f"not in the file: {', '.join(map(repr, absent))}{cut}")
        parts = {t: parts[t] for t in wanted}
    if not into_existing:
        refuse_existing(
            saver, list(parts), "imported", lambda t: _exportfile.file_keys(fp, parts[t])
        )
    report = ImportReport(thread_ids=list(parts), whole_file=contents.whole)
    report.left_out = [contents.cut] if contents.cut is not None else []
    current: str | None = None
    handled = 0
    try:
        for thread_id, part in parts.items():
            current = thread_id
            existing = saver.run_read(_held.checkpoint_keys, thread_id)
            entries = _exportfile.file_entries(fp, part, existing, writer.serde)
            stored, writes = store_thread(writer, thread_id, counted(entries, progress, handled))
            current = None
            handled += part.checkpoints
            if progress is not None:
                progress(handled)
            report.threads += 1
            report.checkpoints_imported += stored
            report.checkpoints_skipped += part.checkpoints - stored
            report.writes_imported += writes
    except KeyboardInterrupt as e:
        raise Interrupted(report, len(parts), current) from e
    return report
