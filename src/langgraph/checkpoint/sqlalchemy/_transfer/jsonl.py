"""The versioned JSON lines file of :func:`.transfer.export_threads` and
:func:`.transfer.import_threads`: its header, its checkpoint records, the lines that
close each thread and the file (version 3), and the ``{"type": ..., "data": base64}``
encoding of serialised values. :mod:`._transfer.exportfile` checks a whole file.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterator, Sequence
from typing import IO, Any

from langgraph.checkpoint.base import CheckpointTuple
from langgraph.checkpoint.serde.base import SerializerProtocol

from langgraph.checkpoint.sqlalchemy._codec.opaque import OpaqueSerializer
from langgraph.checkpoint.sqlalchemy._codec.records import PendingWrite
from langgraph.checkpoint.sqlalchemy.errors import ExportFormatError

__all__ = [
    "EXPORT_FORMAT",
    "EXPORT_VERSION",
    "WAY_OUT",
    "check_header",
    "export_end_line",
    "header_line",
    "parse_record",
    "read_line",
    "record_key",
    "record_line",
    "text_lines",
    "thread_end_line",
]

#: ``format`` of the first line of an export file.
EXPORT_FORMAT = "langgraph-checkpoint-sqlalchemy/jsonl"
#: ``version`` of the export format written by :func:`export_threads`: 3 closes each
#: thread with a line counting its checkpoints and writes, and the file with one
#: counting its threads (what proves a file whole); 2 stores each channel value apart
#: from the checkpoint document, as the saver stored it.
EXPORT_VERSION = 3
#: Versions :func:`check_header` accepts (1 kept the channel values inside the document;
#: 1 and 2 have no end lines).
READ_VERSIONS = (1, 2, 3)
#: The first version whose files close each thread and end with an end line.
CLOSED_SINCE = 3
#: What to do with a file that cannot be proved whole, said in every such refusal.
WAY_OUT = (
    "nothing was imported. Export the threads again, or pass allow_incomplete=True (CLI: "
    "--allow-incomplete) to import the threads the file holds as they are"
)


def _encode(serde: SerializerProtocol, value: Any) -> dict[str, str]:
    type_, data = serde.dumps_typed(value)
    return {"type": type_, "data": base64.b64encode(data or b"").decode("ascii")}


def _decode(serde: SerializerProtocol, doc: Any, *, value: bool = False) -> Any:
    """A ``{"type", "data"}`` of the file decoded; a ``value`` (a channel value or a
    write) read by an :class:`._codec.opaque.OpaqueSerializer` stays as stored, byte for byte."""
    if not isinstance(doc, dict) or not isinstance(doc.get("type"), str):
        raise ValueError("a value must be {'type': str, 'data': base64}")
    data = base64.b64decode(str(doc.get("data", "")), validate=True)
    if value and isinstance(serde, OpaqueSerializer):
        return serde.stored(doc["type"], data)
    return serde.loads_typed((doc["type"], data))


def header_line() -> str:
    """The first line of an export file: its format and version."""
    return json.dumps({"format": EXPORT_FORMAT, "version": EXPORT_VERSION}) + "\n"


def thread_end_line(thread_id: str, checkpoints: int, writes: int) -> str:
    """The line after a thread's last checkpoint: the thread and what it holds."""
    end = {"end_of_thread": thread_id, "checkpoints": checkpoints, "writes": writes}
    return json.dumps(end, ensure_ascii=False) + "\n"


def export_end_line(threads: int, checkpoints: int, writes: int) -> str:
    """The last line of an export file, written once everything else is: without it
    the file is an interrupted export."""
    end = {
        "end_of_export": EXPORT_FORMAT,
        "threads": threads,
        "checkpoints": checkpoints,
        "writes": writes,
    }
    return json.dumps(end) + "\n"


def record_line(
    serde: SerializerProtocol,
    thread_id: str,
    ns: str,
    checkpoint_id: str,
    tup: CheckpointTuple,
    pending: Sequence[PendingWrite],
) -> str:
    """The line of one checkpoint and its pending writes, values through ``serde`` (the
    document without its channel values, then each value and each write)."""
    parent = (tup.parent_config or {}).get("configurable", {}).get("checkpoint_id")
    values = tup.checkpoint.get("channel_values") or {}
    record = {
        "thread_id": thread_id,
        "checkpoint_ns": ns,
        "checkpoint_id": checkpoint_id,
        "parent_checkpoint_id": parent,
        "metadata": tup.metadata,
        "checkpoint": _encode(serde, {**tup.checkpoint, "channel_values": {}}),
        "channel_values": {ch: _encode(serde, v) for ch, v in values.items()},
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
    return json.dumps(record, ensure_ascii=False, default=str) + "\n"


def read_line(fp: IO[str], number: int) -> str:
    """Line ``number`` of a text file (empty at its end); a file that is not text (not
    UTF-8) is an :class:`ExportFormatError` naming the line, not a
    ``UnicodeDecodeError``."""
    try:
        return fp.readline()
    except UnicodeDecodeError as e:
        raise ExportFormatError(
            f"line {number}: not UTF-8 text ({e.reason}): not an export of "
            "langgraph-checkpoint-sqlalchemy"
        ) from None


def text_lines(fp: IO[str], first: int = 1) -> Iterator[tuple[str, int]]:
    """``(line, number)`` of a text file from where it is, numbered from ``first``."""
    number = first
    while line := read_line(fp, number):
        yield line, number
        number += 1


def check_header(line: str) -> int:
    """Check the first line of an export file; its version.

    Raises:
        ExportFormatError: Not a header, or an unknown format or version.
    """
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
    if header.get("version") not in READ_VERSIONS:
        raise ExportFormatError(
            f"line 1: export version {header.get('version')!r} is not supported by this "
            "version of langgraph-checkpoint-sqlalchemy (it reads versions "
            f"{', '.join(map(str, READ_VERSIONS))})."
        )
    return int(header["version"])


def _idx(value: Any) -> int:
    """A write's ``idx``: an integer of the column's 32-bit range."""
    if isinstance(value, bool) or not isinstance(value, int) or not -(2**31) <= value < 2**31:
        raise ValueError(f"idx must be an integer of 32 bits, not {value!r}")
    return value


def record_key(line: str, number: int) -> tuple[str, str]:
    """``(checkpoint_ns, checkpoint_id)`` of a record line, nothing else decoded.

    Raises:
        ExportFormatError: Not a checkpoint record.
    """
    try:
        rec = json.loads(line)
        key = (rec["checkpoint_ns"], rec["checkpoint_id"])
    except (ValueError, KeyError, TypeError, RecursionError):
        key = None
    if key is None or not all(isinstance(k, str) for k in key):
        raise ExportFormatError(f"line {number}: not a checkpoint record (no checkpoint id).")
    return key


def parse_record(
    serde: SerializerProtocol, line: str | dict[str, Any], number: int
) -> tuple[Any, ...]:
    """Line ``number`` of an export file (any version; or that line's JSON already
    parsed), values decoded with ``serde``.

    Returns:
        ``(thread_id, checkpoint_ns, checkpoint_id, parent_checkpoint_id, metadata,
        checkpoint, pending_writes)``, the writes as :class:`._codec.records.PendingWrite`.

    Raises:
        ExportFormatError: Not a checkpoint record (the message gives the line number).
    """
    try:
        rec = json.loads(line) if isinstance(line, str) else line
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
        if not isinstance(checkpoint.get("channel_versions", {}), dict):
            raise ValueError("the checkpoint's channel_versions is not a map")
        if not isinstance(checkpoint.get("channel_values", {}), dict):
            raise ValueError("the checkpoint's channel_values is not a map")
        if "channel_values" in rec:  # version 2: each value apart, as stored
            values = rec["channel_values"]
            if not isinstance(values, dict):
                raise ValueError("channel_values must be an object")
            checkpoint["channel_values"] = {
                str(ch): _decode(serde, doc, value=True) for ch, doc in values.items()
            }
        pending = [
            PendingWrite(
                str(w["task_id"]),
                str(w.get("task_path") or ""),
                str(w["channel"]),
                None if w.get("idx") is None else _idx(w["idx"]),
                _decode(serde, w["value"], value=True),
            )
            for w in rec.get("pending_writes") or []
        ]
    except (
        KeyError,
        TypeError,
        ValueError,
        AttributeError,
        OverflowError,
        RecursionError,
        binascii.Error,
    ) as e:
        detail = f"missing field {e}" if isinstance(e, KeyError) else str(e)
        raise ExportFormatError(f"line {number}: not a checkpoint record ({detail}).") from e
    return thread_id, ns, checkpoint_id, parent, metadata, checkpoint, pending
