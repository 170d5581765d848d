"""Writing what :mod:`.transfer` reads into our saver: a thread's checkpoints with their
writes in one transaction, the checks made before anything is written (threads the
target has, ids our tables cannot hold), the typed error of a source row that cannot be
moved, and the verification of a copied thread by key.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, cast

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import Checkpoint, CheckpointMetadata

from langgraph.checkpoint.sqlalchemy._codec.configs import namespace, thread
from langgraph.checkpoint.sqlalchemy._codec.records import PendingWrite
from langgraph.checkpoint.sqlalchemy._plans.methods import PutArgs
from langgraph.checkpoint.sqlalchemy._transfer import held as _held
from langgraph.checkpoint.sqlalchemy._transfer.sources import Reader, batches
from langgraph.checkpoint.sqlalchemy.errors import (
    CheckpointConfigError,
    CheckpointDecodeError,
    ThreadNotEmptyError,
)
from langgraph.checkpoint.sqlalchemy.saver import SQLAlchemySaver

__all__ = [
    "Entry",
    "refuse_existing",
    "source_entries",
    "source_errors",
    "store_thread",
    "unfit",
    "verify",
]


def verify(
    reader: Reader, target: SQLAlchemySaver, thread_id: str, keys: Sequence[tuple[str, str]]
) -> tuple[int, int, str] | None:
    """Check that every checkpoint of ``keys`` and each of its pending writes is in the
    target, by key, 500 checkpoints at a time. Extra checkpoints or writes in the target
    (a thread that moved on after an earlier copy) are fine.

    Returns:
        None when all are there, else ``(missing checkpoints, missing writes, first
        "checkpoint_ns/checkpoint_id" missing or missing a write)``.
    """
    missing_checkpoints = missing_writes = 0
    first = ""
    for batch in batches(keys):
        present, target_writes = target.run_read(_held.held_keys, thread_id, batch)
        source_writes = reader.write_keys(thread_id, batch)
        lacking = {(k[0], k[1]) for k, n in source_writes.items() if target_writes[k] < n}
        for key in batch:
            absent = key not in present
            missing_checkpoints += absent
            if (absent or key in lacking) and not first:
                first = f"{key[0]}/{key[1]}"
        missing_writes += sum(max(0, n - target_writes[k]) for k, n in source_writes.items())
    if missing_checkpoints or missing_writes:
        return missing_checkpoints, missing_writes, first
    return None


#: One checkpoint to store: ``(checkpoint_ns, checkpoint_id, parent_id, checkpoint,
#: metadata, pending writes)``.
Entry = tuple[str, str, str | None, Checkpoint, CheckpointMetadata, Sequence[PendingWrite]]


def _put_args(thread_id: str, entry: Entry) -> PutArgs:
    """The arguments of :meth:`.SQLAlchemySaver.put_with_writes` for ``entry``.

    ``new_versions`` is the checkpoint's channel versions of the channels it holds a
    value for; blobs are first-write-wins, so values shared with the parent are not
    duplicated. Writes keep their ``idx`` when the source gave it and are
    first-write-wins, so storing them again is harmless.
    """
    ns, _, parent_id, checkpoint, metadata, pending = entry
    parent: dict[str, Any] = {"thread_id": thread_id, "checkpoint_ns": ns}
    if parent_id:
        parent["checkpoint_id"] = parent_id
    values = checkpoint.get("channel_values") or {}
    new_versions = {
        ch: v for ch, v in checkpoint.get("channel_versions", {}).items() if ch in values
    }
    config = cast(RunnableConfig, {"configurable": parent})
    return config, checkpoint, metadata, new_versions, pending


def store_thread(
    target: SQLAlchemySaver, thread_id: str, entries: Callable[[], Iterator[Entry]]
) -> tuple[int, int]:
    """Store the checkpoints ``entries()`` gives, with their writes, in one transaction
    (:meth:`.SQLAlchemySaver.put_all_with_writes`): the thread gets all of them or none,
    whatever stops it (an error, ``KeyboardInterrupt``, a killed process). ``entries``
    is called again when a transient failure starts the transaction over.

    Returns:
        ``(checkpoints, pending writes)`` stored.

    Raises:
        CheckpointDecodeError: An entry that cannot be read or stored as it is, named.
    """
    at = ["", ""]  # the namespace and id of the entry being stored, for its error
    writes = [0]

    def items() -> Iterator[PutArgs]:
        writes[0] = 0
        for entry in entries():
            at[:] = entry[:2]
            writes[0] += len(entry[5])
            yield _put_args(thread_id, entry)

    with _source_errors(thread_id, lambda: (at[0], at[1])):
        stored = target.put_all_with_writes(items)
    return stored, writes[0]


def source_entries(
    reader: Reader,
    thread_id: str,
    keys: Sequence[tuple[str, str]],
    progress: Callable[[int], None] | None,
    handled: int,
) -> Callable[[], Iterator[Entry]]:
    """The checkpoints ``keys`` of a source thread, read one at a time, as the entries
    of :func:`store_thread`; ``progress`` after each, counting from ``handled``
    (again from there when the transaction starts over)."""

    def entries() -> Iterator[Entry]:
        for n, (ns, checkpoint_id) in enumerate(keys, 1):
            with source_errors(thread_id, ns, checkpoint_id):
                tup, pending = reader.read(thread_id, ns, checkpoint_id)
            parent = (tup.parent_config or {}).get("configurable", {}).get("checkpoint_id")
            yield ns, checkpoint_id, parent, tup.checkpoint, tup.metadata, pending
            if progress is not None:
                progress(handled + n)

    return entries


def counted(
    entries: Callable[[], Iterator[Entry]], progress: Callable[[int], None] | None, handled: int
) -> Callable[[], Iterator[Entry]]:
    """``entries``, telling ``progress`` after each how many are handled, counting from
    ``handled`` (again from there when the transaction starts over)."""
    if progress is None:
        return entries
    tell = progress

    def counting() -> Iterator[Entry]:
        for n, entry in enumerate(entries(), 1):
            yield entry
            tell(handled + n)

    return counting


def refuse_existing(
    target: SQLAlchemySaver,
    thread_ids: Sequence[str],
    done: str,
    wanted: Callable[[str], Iterable[tuple[str, str]]],
) -> None:
    """Refuse, before anything is written, threads that already have checkpoints in
    ``target`` but not every one of ``wanted(thread_id)`` (the source's, or the file's,
    by namespace and id). A thread the target holds whole, as a copy that was
    interrupted after it leaves it, passes: nothing of it is to be written.

    Raises:
        ThreadNotEmptyError: Some do; the message names up to 10 and the way out.
    """
    new = set(Reader(target).missing([str(t) for t in thread_ids]))
    existing = [
        t
        for t in thread_ids
        if t not in new and not set(wanted(t)) <= target.run_read(_held.checkpoint_keys, t)
    ]
    if existing:
        more = ", ..." if len(existing) > 10 else ""
        raise ThreadNotEmptyError(
            f"{len(existing)} thread(s) already have checkpoints in the target, but not "
            f"every one to be {done} ({', '.join(map(repr, existing[:10]))}{more}): "
            f"nothing was {done}. Pass into_existing=True (CLI: --into-existing) to add the "
            "missing ones, or choose other threads (thread_ids=..., CLI: --thread).",
            existing,
        )


@contextmanager
def source_errors(thread_id: str, ns: str, checkpoint_id: str) -> Iterator[None]:
    """A source checkpoint that cannot be read or stored as it is becomes a
    ``CheckpointDecodeError`` naming it (a damaged or forged source row), not a raw
    error from deep inside a serializer or an official saver."""
    with _source_errors(thread_id, lambda: (ns, checkpoint_id)):
        yield


@contextmanager
def _source_errors(thread_id: str, where: Callable[[], tuple[str, str]]) -> Iterator[None]:
    """:func:`source_errors` of the checkpoint ``where()`` names when the error comes."""
    try:
        yield
    except (CheckpointDecodeError, CheckpointConfigError, ConnectionError):
        raise
    except (ValueError, TypeError, KeyError, AttributeError, OverflowError, LookupError) as e:
        raise CheckpointDecodeError(
            thread_id, *where(), "source", f"{type(e).__name__}: {e}"
        ) from e


def unfit(thread_id: str, keys: Sequence[tuple[str, str]]) -> str | None:
    """Why our tables cannot hold a thread with these ids (the saver's own checks on
    thread ids and namespaces), or None."""
    try:
        thread(thread_id)
        for ns in {ns for ns, _ in keys}:
            namespace(ns)
    except CheckpointConfigError as e:
        return str(e)
    return None
