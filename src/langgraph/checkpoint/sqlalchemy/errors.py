"""Typed errors of the saver. Each message says what to do."""

from __future__ import annotations

__all__ = [
    "CheckpointConfigError",
    "CheckpointHistoryError",
    "CheckpointMetadataError",
    "SchemaOutOfDateError",
    "ThreadNotEmptyError",
]


class CheckpointConfigError(ValueError):
    """A ``RunnableConfig`` the saver cannot use.

    Raised before anything is read or written: a missing or non-string ``thread_id``, a
    non-string ``checkpoint_ns`` or ``checkpoint_id``, or an id longer than its column
    (see :mod:`langgraph.checkpoint.sqlalchemy.schema` for the limits).
    """


class CheckpointMetadataError(ValueError):
    """Checkpoint metadata or a metadata filter that is not JSON.

    Metadata is stored as a JSON document so that ``list(filter=...)`` runs in the
    database: keys must be strings and values str, int, float (finite), bool, None, or
    lists and dicts of those.
    """


class SchemaOutOfDateError(RuntimeError):
    """The database's schema is not at the revision this version of the library needs.

    Run ``saver.setup()`` (or ``python -m langgraph.checkpoint.sqlalchemy upgrade --url
    URL``, or ``alembic upgrade head``) to migrate it.
    """


class ThreadNotEmptyError(ValueError):
    """``copy_thread`` onto a thread that already has checkpoints.

    Copying would mix two histories under one thread id. Delete the target thread first
    (``delete_thread``) or copy to a new thread id. Nothing was written.
    """


class CheckpointHistoryError(RuntimeError):
    """A checkpoint's parent chain cannot be walked: longer than the walk's cap (100,000
    checkpoints) or looping back on itself (parent ids forged or re-put).

    Prune the thread (``prune(..., strategy="keep_latest")``) or give its DeltaChannels a
    smaller ``snapshot_frequency``.
    """
