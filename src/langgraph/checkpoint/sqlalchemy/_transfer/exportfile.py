"""An export file checked whole before anything of it is imported (:func:`scan`), and
read back thread by thread for :func:`.transfer.import_threads` (:func:`file_entries`).

Each thread of a file is imported in one transaction, read a second time from where
its lines start (:class:`Part`), so that a retried transaction reads it again.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import IO, Any

from langgraph.checkpoint.serde.base import SerializerProtocol

from langgraph.checkpoint.sqlalchemy._transfer.jsonl import (
    CLOSED_SINCE,
    EXPORT_FORMAT,
    WAY_OUT,
    check_header,
    parse_record,
    read_line,
    record_key,
    text_lines,
)
from langgraph.checkpoint.sqlalchemy._transfer.writing import Entry
from langgraph.checkpoint.sqlalchemy.errors import ExportFormatError, IncompleteExportError

__all__ = ["Contents", "Part", "file_entries", "file_keys", "records", "scan"]


@dataclass
class Part:
    """One thread's lines in an export file (they follow each other).

    Attributes:
        thread_id: The thread.
        offset: Where its first line starts (``fp.tell()``, for ``fp.seek``).
        line: The number of its first line.
        checkpoints: Its checkpoint records.
        writes: The pending writes of those records.
    """

    thread_id: str
    offset: int
    line: int
    checkpoints: int = 0
    writes: int = 0


@dataclass
class Contents:
    """What :func:`scan` found in an export file.

    Attributes:
        version: The file's format version.
        parts: Its threads, in file order, each whole (see ``cut``).
        whole: The file closed with its end line and every count agreed; False only
            when ``allow_incomplete`` let a file through without one.
        cut: The thread the file ends inside of (after its last lines, without the
            line that closes it, or in the middle of a line), left out of ``parts``.
    """

    version: int
    parts: list[Part] = field(default_factory=list)
    whole: bool = False
    cut: str | None = None


def scan(fp: IO[str], serde: SerializerProtocol | None, *, allow_incomplete: bool) -> Contents:
    """Read a whole export file from its start and check it; the file is left at its
    end. Every record is decoded with ``serde`` (None: only its thread and writes
    are read), and the file must be whole: each thread's lines together and closed by
    the line counting them, the file ended by the line counting everything, nothing
    after it.

    Args:
        fp: The file, seekable.
        serde: Decodes each record as the import will (checking every line before the
            first write); None to read threads and counts only.
        allow_incomplete: Accept a file that cannot be proved whole: one without its
            end line (version 3: the thread it ends inside of is left out), or of
            version 1 or 2 (which have no end lines: every thread is taken as it is,
            but for one the file ends in the middle of a line of).

    Raises:
        ExportFormatError: Not an export file, or a line that is not a checkpoint
            record (the message gives the line number).
        IncompleteExportError: The file cannot be proved whole (without
            ``allow_incomplete``), or its counts or thread lines disagree (always).
    """
    fp.seek(0)
    header = read_line(fp, 1)
    if not header:
        raise IncompleteExportError(f"the file is empty (an interrupted export?); {WAY_OUT}.")
    try:
        version = check_header(header)
    except ExportFormatError:
        if header.endswith("\n"):
            raise
        raise IncompleteExportError(
            f"line 1: the file ends inside its first line; {WAY_OUT}."
        ) from None
    if version < CLOSED_SINCE and not allow_incomplete:
        raise IncompleteExportError(
            f"line 1: export version {version} has no end line, so nothing proves this file "
            f"whole (an interrupted export looks the same); {WAY_OUT}."
        )
    scanner = _Scanner(Contents(version), serde)
    number = 2
    while True:
        offset = fp.tell()
        line = read_line(fp, number)
        if not line:
            break
        scanner.feed(line, number, offset)
        number += 1
    return scanner.end(allow_incomplete)


class _Scanner:
    """The state of :func:`scan` between lines."""

    def __init__(self, contents: Contents, serde: SerializerProtocol | None) -> None:
        self.contents = contents
        self.serde = serde
        self.closes = contents.version >= CLOSED_SINCE
        self.current: Part | None = None  # the thread whose lines are being read
        self.seen: set[str] = set()
        self.cut_at: int | None = None  # the number of a line the file ends inside of
        self.last = 1

    def feed(self, line: str, number: int, offset: int) -> None:
        if not line.strip():
            return
        self.last = number
        if self.contents.whole:
            raise IncompleteExportError(
                f"line {number}: a line after the end of the export (files joined?); "
                "nothing was imported. Import each export file on its own"
            )
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError) as e:
            if not line.endswith("\n"):  # the last line, cut
                self.cut_at = number
                return
            raise ExportFormatError(f"line {number}: not a checkpoint record ({e}).") from e
        if not isinstance(obj, dict):
            raise ExportFormatError(f"line {number}: not a checkpoint record (not an object).")
        if self.closes and "end_of_thread" in obj:
            self.thread_end(obj, number)
        elif self.closes and "end_of_export" in obj:
            self.export_end(obj, number)
        else:
            self.record(obj, number, offset)

    def record(self, obj: dict[str, Any], number: int, offset: int) -> None:
        thread_id = obj.get("thread_id")
        if not isinstance(thread_id, str):
            raise ExportFormatError(f"line {number}: not a checkpoint record (no thread_id).")
        part = self.current
        if part is None or part.thread_id != thread_id:
            if part is not None and self.closes:
                raise IncompleteExportError(
                    f"line {number}: thread {part.thread_id!r} has no end line before "
                    f"thread {thread_id!r} starts: its lines were cut; {WAY_OUT}."
                )
            if thread_id in self.seen:
                raise IncompleteExportError(
                    f"line {number}: thread {thread_id!r} again, after other threads: not "
                    f"one export (each thread's lines follow each other); {WAY_OUT}."
                )
            part = self.current = Part(thread_id, offset, number)
            self.seen.add(thread_id)
            self.contents.parts.append(part)
        if self.serde is not None:
            pending = parse_record(self.serde, obj, number)[6]
        else:
            pending = obj.get("pending_writes") or []
            if not isinstance(pending, list):
                raise ExportFormatError(f"line {number}: pending_writes must be a list.")
        part.checkpoints += 1
        part.writes += len(pending)

    def thread_end(self, obj: dict[str, Any], number: int) -> None:
        part = self.current
        if part is None or obj["end_of_thread"] != part.thread_id:
            raise IncompleteExportError(
                f"line {number}: the end of thread {obj['end_of_thread']!r}, which is not "
                f"the thread of the lines before it; {WAY_OUT}."
            )
        stated = (obj.get("checkpoints"), obj.get("writes"))
        if stated != (part.checkpoints, part.writes):
            raise IncompleteExportError(
                f"line {number}: thread {part.thread_id!r} is to have {stated[0]} checkpoints "
                f"and {stated[1]} pending writes, the file holds {part.checkpoints} and "
                f"{part.writes} (lines lost or added); {WAY_OUT}."
            )
        self.current = None

    def export_end(self, obj: dict[str, Any], number: int) -> None:
        parts = self.contents.parts
        if self.current is not None:
            raise IncompleteExportError(
                f"line {number}: the export ends, but thread {self.current.thread_id!r} has no "
                f"end line; {WAY_OUT}."
            )
        found = (len(parts), sum(p.checkpoints for p in parts), sum(p.writes for p in parts))
        stated = (obj.get("threads"), obj.get("checkpoints"), obj.get("writes"))
        if obj["end_of_export"] != EXPORT_FORMAT or stated != found:
            raise IncompleteExportError(
                f"line {number}: the end line counts {stated[0]} threads, {stated[1]} "
                f"checkpoints and {stated[2]} pending writes, the file holds {found[0]}, "
                f"{found[1]} and {found[2]} (lines lost or added); {WAY_OUT}."
            )
        self.contents.whole = True

    def end(self, allow_incomplete: bool) -> Contents:
        contents = self.contents
        if contents.whole:
            return contents
        if not allow_incomplete:
            where = (
                f"line {self.cut_at}: the file ends inside this line"
                if self.cut_at is not None
                else f"the file ends after line {self.last} without its end line"
            )
            raise IncompleteExportError(
                f"{where}: the export was interrupted or the file cut; {WAY_OUT}."
            )
        if self.current is not None and (self.closes or self.cut_at is not None):
            contents.cut = self.current.thread_id
            contents.parts.remove(self.current)
        return contents


def records(fp: IO[str], part: Part) -> Iterator[tuple[str, int]]:
    """``(line, number)`` of the checkpoint records of ``part``, read from where it
    starts (``fp`` is moved there)."""
    fp.seek(part.offset)
    left = part.checkpoints
    for line, number in text_lines(fp, part.line):
        if line.strip():
            yield line, number
            left -= 1
            if left == 0:
                return


def file_keys(fp: IO[str], part: Part) -> list[tuple[str, str]]:
    """``(checkpoint_ns, checkpoint_id)`` of a thread's records in an export file."""
    return [record_key(line, number) for line, number in records(fp, part)]


def file_entries(
    fp: IO[str], part: Part, existing: set[tuple[str, str]], serde: SerializerProtocol
) -> Callable[[], Iterator[Entry]]:
    """The checkpoints of a thread's records in an export file, but those of
    ``existing`` (and a checkpoint the file repeats), as the entries of
    :func:`._transfer.writing.store_thread`; read from the thread's first line at each call."""

    def entries() -> Iterator[Entry]:
        seen = set(existing)
        for line, number in records(fp, part):
            record = parse_record(serde, line, number)
            _, ns, checkpoint_id, parent, metadata, checkpoint, pending = record
            if (ns, checkpoint_id) not in seen:
                seen.add((ns, checkpoint_id))
                yield ns, checkpoint_id, parent, checkpoint, metadata, pending

    return entries
