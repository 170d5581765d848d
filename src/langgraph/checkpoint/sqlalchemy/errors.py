"""Every typed error of the package (each message says what to do), and
:class:`RetryEvent`, what the ``on_retry`` callback is given for each retried failure.

The package root re-exports all of them (its ``__all__`` takes this module's) but the
three of :mod:`langgraph.checkpoint.sqlalchemy.transfer` (:class:`UnknownSourceError`,
:class:`ExportFormatError`, :class:`IncompleteExportError`), which that module exports
and which stay out of this ``__all__`` so that the root's public names do not change.
"""

from __future__ import annotations

import errno
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = [
    "CheckpointClockSkewError",
    "CheckpointConfigError",
    "CheckpointConflictError",
    "CheckpointConnectionError",
    "CheckpointContentionError",
    "CheckpointDecodeError",
    "CheckpointFileReadOnlyError",
    "CheckpointHistoryError",
    "CheckpointMetadataError",
    "CheckpointReadOnlyError",
    "CheckpointStorageFullError",
    "DatabaseURLError",
    "DowngradeRefusedError",
    "DriverNotInstalledError",
    "MigrationLockTimeout",
    "RetryEvent",
    "SchemaOutOfDateError",
    "StoreDecodeError",
    "StoreRequestError",
    "ThreadLockTimeout",
    "ThreadNotEmptyError",
    "UnsupportedDialectError",
    "UnsupportedDriverError",
    "ValueTooLargeError",
]


def _identify(error: Exception, thread_id: str, checkpoint_ns: str, **more: str | None) -> None:
    """Keep on ``error`` the thread, namespace and other identifiers its message names
    (the documented attributes of the errors about one checkpoint)."""
    vars(error).update(thread_id=thread_id, checkpoint_ns=checkpoint_ns, **more)


class CheckpointConfigError(ValueError):
    """A ``RunnableConfig`` the saver cannot use.

    Raised before anything is read or written: a missing or non-string ``thread_id``, a
    non-string ``checkpoint_ns`` or ``checkpoint_id``, or an id longer than its column
    (see :mod:`langgraph.checkpoint.sqlalchemy.schema` for the limits).
    """


class CheckpointClockSkewError(CheckpointConfigError):
    """A checkpoint whose id sorts at or below its parent's: it would never be the latest.

    LangGraph's latest checkpoint of a thread is the one with the highest
    ``checkpoint_id``, and LangGraph makes ids (UUID version 6) from the writing host's
    clock. A run continued on a host whose clock is behind the parent's host writes a
    child that sorts before its parent: ``get_tuple`` without an id would keep returning
    the parent, and the child's step would be lost from view. Raised before anything is
    written, for ids that are time-ordered UUIDs (versions 6 and 7) on both sides.

    Attributes:
        checkpoint_id: The id of the checkpoint being put.
        parent_checkpoint_id: The id of its parent (``config["configurable"]
            ["checkpoint_id"]``).
    """

    def __init__(self, checkpoint_id: str, parent_checkpoint_id: str) -> None:
        self.checkpoint_id = checkpoint_id
        self.parent_checkpoint_id = parent_checkpoint_id
        super().__init__(
            f"checkpoint {checkpoint_id!r} sorts before its parent {parent_checkpoint_id!r}, "
            "so it would never be the thread's latest checkpoint. Checkpoint ids are made "
            "from the writing host's clock: this host's clock is probably behind the one "
            "that wrote the parent. Synchronise the clocks (NTP) and retry; nothing was "
            "stored."
        )


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
    """``copy_thread`` onto a thread that already has checkpoints, or ``copy_threads`` /
    ``import_threads`` into threads that have some but not every one of the source's (or
    the file's), without ``into_existing``.

    Copying would mix two histories under one thread id. Delete the target thread first
    (``delete_thread``) or copy to a new thread id. Nothing was written.

    Attributes:
        thread_ids: The threads that already have checkpoints (when known).
    """

    def __init__(self, message: str, thread_ids: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.thread_ids = list(thread_ids)


class CheckpointHistoryError(RuntimeError):
    """A checkpoint's parent chain cannot be walked: longer than the walk's cap (100,000
    checkpoints) or looping back on itself (parent ids forged or re-put).

    Prune the thread (``prune(..., strategy="keep_latest")``) or give its DeltaChannels a
    smaller ``snapshot_frequency``.
    """


class CheckpointConflictError(RuntimeError):
    """Another run wrote to the thread since this run read it (``detect_conflicts=True``).

    The saver refused a checkpoint whose parent is no longer the newest checkpoint of its
    ``(thread_id, checkpoint_ns)``: two runs started from the same state, and storing this
    one would silently fork the thread. Nothing of this put was stored. Re-run from the
    thread's latest state (``graph.invoke(..., config)`` again), or serialise runs with
    ``saver.lock_thread(thread_id)``. Deliberate forks (``update_state`` on an older
    checkpoint, replays from a ``checkpoint_id``) are written with ``source`` ``"update"``
    or ``"fork"`` and are not refused.

    Attributes:
        thread_id: The thread.
        checkpoint_ns: The namespace.
        parent_checkpoint_id: The parent this put named.
        newest_checkpoint_id: The newest checkpoint found instead.
    """

    thread_id: str
    checkpoint_ns: str
    parent_checkpoint_id: str | None
    newest_checkpoint_id: str

    def __init__(
        self, thread_id: str, checkpoint_ns: str, parent_id: str | None, newest_id: str
    ) -> None:
        super().__init__(
            f"thread {thread_id!r} (namespace {checkpoint_ns!r}) moved on: this run's "
            f"checkpoint has parent {parent_id!r} but the newest checkpoint is {newest_id!r}, "
            "written by another run since this one started. Nothing was stored; re-run from "
            "the latest state or serialise runs with saver.lock_thread(thread_id)."
        )
        _identify(
            self,
            thread_id,
            checkpoint_ns,
            parent_checkpoint_id=parent_id,
            newest_checkpoint_id=newest_id,
        )


class CheckpointDecodeError(ValueError):
    """A stored checkpoint, channel value or write cannot be decoded.

    The row was damaged or forged (or written with another serializer, e.g. before an
    ``EncryptedSerializer`` key change). ``get_tuple`` raises it; ``list`` logs it and
    goes on with the other checkpoints.

    Attributes:
        thread_id: The thread.
        checkpoint_ns: The namespace.
        checkpoint_id: The checkpoint.
        part: What failed: ``"checkpoint"``, ``"channel <name>"``, ``"write <task>/<channel>"``,
            ``"inline_values"``, ``"metadata"``, ``"value_versions"``, an id column
            (``"parent_checkpoint_id"``, ...), or ``"row"`` for anything else a forged
            row holds.
    """

    thread_id: str
    checkpoint_ns: str
    checkpoint_id: str
    part: str

    def __init__(
        self, thread_id: str, checkpoint_ns: str, checkpoint_id: str, part: str, cause: str
    ) -> None:
        super().__init__(
            f"cannot decode the {part} of checkpoint {checkpoint_id!r} (thread {thread_id!r}, "
            f"namespace {checkpoint_ns!r}): {cause}. The row is damaged, forged, or was "
            "written with another serializer or key; delete the checkpoint or restore it."
        )
        _identify(self, thread_id, checkpoint_ns, checkpoint_id=checkpoint_id, part=part)


class StoreDecodeError(ValueError):
    """A stored item of ``SQLAlchemyStore`` cannot be read back: its value is not a JSON
    object, or its ``created_at``/``updated_at`` is not a time (a damaged or forged row).
    ``get`` raises it; ``search`` logs it (logger ``langgraph.store.sqlalchemy``, level
    warning) and goes on with the other items.

    Attributes:
        namespace: The item's namespace.
        key: The item's key.
    """

    namespace: tuple[str, ...]
    key: str

    def __init__(self, namespace: tuple[str, ...], key: str, cause: str) -> None:
        super().__init__(
            f"cannot read the value of item {key!r} in namespace {namespace}: {cause}. The "
            "row is damaged or forged; delete the item (store.delete) or restore it."
        )
        self.namespace, self.key = namespace, key


class StoreRequestError(ValueError):
    """A call of ``SQLAlchemyStore`` refused before anything ran or was written: a value
    out of the store's range (a TTL above its maximum), a search filter the store does
    not support (a top-level ``$and``/``$or``, an unknown operator), or a request over
    one of its bounds (a filter's keys or size, ``list_namespaces`` match conditions, an
    item value's size: docs/store.md, "Limits"). The message names the limit and what to
    do instead."""


class CheckpointContentionError(CheckpointConflictError):
    """Every attempt of a call lost to a concurrent transaction within the saver's
    ``retry_timeout``: a deadlock, a serialization failure (PostgreSQL 40001/40P01), or a
    Galera certification conflict (two nodes wrote the same row at once: error 1213).

    The saver re-runs such a transaction by itself (every operation is idempotent); this
    error means it kept losing. Nothing of the call was stored. Its thread and
    checkpoint attributes are None (the database does not say which row conflicted).
    """

    def __init__(self, message: str) -> None:
        RuntimeError.__init__(self, message)
        self.thread_id = self.checkpoint_ns = self.newest_checkpoint_id = None  # type: ignore[assignment]
        self.parent_checkpoint_id = None


class CheckpointConnectionError(ConnectionError):
    """The database could not be reached, or kept dropping the connection, for the
    saver's whole ``retry_timeout`` (15 s by default).

    The saver retries an operation on a fresh connection when the server dropped the old
    one (restart, failover, ``pg_terminate_backend``, ``KILL``, a Galera node leaving the
    cluster: error 1047), refused a new one (a server down at start: the same error), or
    is not taking connections yet; every operation is idempotent, so a retry never stores
    anything twice. This error means every attempt failed: nothing of the call is
    half-written (each transaction was rolled back). Retry later; the saver stays usable.

    A saver or store that has never reached its database does not retry: a wrong host
    or port, a server not started, or a database that does not exist raises this error
    at the first attempt with the server's or the driver's words, naming what the URL
    names: its host and port, each host and port of a libpq host list, a socket folder
    (and "the default socket" where it names none). Retries begin once it has connected.
    """


class CheckpointReadOnlyError(CheckpointConnectionError):
    """A write reached a read-only server (a PostgreSQL hot standby, a MySQL/MariaDB
    server with ``read_only``) and it stayed read-only for the saver's whole
    ``retry_timeout``. During a promotion the saver retries until the new primary takes
    the write; this error names the server when none did. Nothing was stored.
    """


class CheckpointStorageFullError(OSError):
    """The database has no room left for a write: the disk (or the filesystem, or the
    tablespace) holding it is full, or the database reached a size limit of its own.

    Raised by every write of the saver and the store (``put``, ``put_writes``, ``setup``,
    a store ``put`` or ``batch``, the command line's writing commands), sync and async,
    for what the database reports as a full disk: SQLite's ``SQLITE_FULL`` ("database or
    disk is full": a full disk, or ``PRAGMA max_page_count`` reached), PostgreSQL's
    SQLSTATE 53100 ``disk_full`` ("could not extend file ...: No space left on device"),
    MySQL/MariaDB's errors 1021 (disk full), 1114 (a table is full) and a write error with
    the system's errno 28 (``ENOSPC``). The message names the database (password hidden),
    the database's own words (never the SQL) and what to do: free space on that disk, or
    move the database to a larger one.

    Nothing of the failed call was stored: its transaction was rolled back, and what was
    stored before is intact and can still be read (on MySQL/MariaDB, whose DDL statements
    commit one by one, a ``setup()`` keeps the migration steps it finished: run it again).
    It is not retried: the disk stays full until someone frees space. An ``OSError``
    whose ``errno`` is ``errno.ENOSPC``, as Python's own file writes report a full disk,
    and not a ``ConnectionError``: LangGraph's default ``RetryPolicy`` does not retry it
    either. Its ``__cause__`` is SQLAlchemy's ``DBAPIError`` around the driver's error
    (once the database has been reached: a first connection's errors have none).

    Attributes:
        database: The database that is full: the SQLite file (``":memory:"`` for an
            in-memory database) or the server's URL, password hidden.
    """

    database: str

    def __init__(self, message: str, *, database: str = "") -> None:
        super().__init__(message)
        self.errno = errno.ENOSPC
        self.database = database


class CheckpointFileReadOnlyError(PermissionError):
    """A write to a SQLite database that this process may not write: the file is
    read-only (``chmod 0444``, another owner), its folder is (SQLite creates the
    ``-wal``, ``-shm`` or ``-journal`` file beside the database at each write, and a
    database in WAL mode cannot even be read without them), or the URL opened it
    read-only (``?mode=ro``) or the connection was made read-only (``PRAGMA
    query_only``). SQLite reports them all as ``SQLITE_READONLY`` ("attempt to write a
    readonly database").

    Raised by every write of the saver and the store and by the command line, sync and
    async; by reads too where the folder is read-only (in WAL mode, as the saver sets it,
    SQLite needs its ``-shm`` file even to read); by ``setup()`` or the first call on a
    new database file in a folder this process may not write. The message names the file
    and, when it can tell, which of the file, its ``-wal``/``-shm`` files or the folder
    is not writable; it never quotes the SQL. Nothing of the call was stored. Fix the
    permissions (give the user running this process write access to the files and their
    folder), or, to only read the database, open it read-only: the URL
    ``sqlite:///file:/path/to/db.sqlite?mode=ro&uri=true`` (in a read-only folder,
    ``?immutable=1&uri=true``, for a database no process writes meanwhile).

    A ``PermissionError`` (an ``OSError``): not retried, here nor by LangGraph's default
    ``RetryPolicy``. A read-only database *server* (a standby) is
    :class:`CheckpointReadOnlyError` instead, which is retried through a promotion.

    Attributes:
        path: The database file (of a ``file:`` URI too); None for an in-memory
            database.
    """

    path: str | None

    def __init__(self, message: str, *, path: str | None = None) -> None:
        super().__init__(message)
        self.path = path


@dataclass(frozen=True)
class RetryEvent:
    """One failed attempt of a call retried through a transient failure: what the
    ``on_retry`` callback of the saver and the store receives (for metrics: a counter of
    retries by ``kind``, of calls that gave up). See docs/observability.md.

    The callback is called in the thread that retries (the caller's thread, the event
    loop's thread for async methods, or the worker thread where SQLite's async methods
    run), after the failure and before the pause; an exception it raises is logged and
    ignored.

    Attributes:
        attempt: The number of the attempt that failed (1 for the call's first).
        kind: What failed: ``"connection"`` (the connection was lost or refused),
            ``"read-only"`` (the server takes no writes: a standby, a promotion under
            way) or ``"conflict"`` (the transaction lost to a concurrent one: a
            deadlock, a serialization failure, a Galera certification conflict).
        elapsed: Seconds since the call's first failure.
        remaining: Seconds left of ``retry_timeout`` (0 once past it).
        error: The failure, as raised: SQLAlchemy's ``DBAPIError`` around the driver's
            error (``error.orig``), or the driver's own ``OSError``. It may quote the
            URL as the driver wrote it: mask it before showing it.
        gave_up: True on the call's last attempt: no other follows, and the call raises
            its typed error (:class:`CheckpointConnectionError`,
            :class:`CheckpointReadOnlyError` or :class:`CheckpointContentionError`,
            whose ``__cause__`` is ``error``).
    """

    attempt: int
    kind: str
    elapsed: float
    remaining: float
    error: BaseException
    gave_up: bool


class MigrationLockTimeout(TimeoutError):
    """``setup()`` (or ``upgrade``) waited for an hour while another process kept the
    migration lock of a MySQL/MariaDB database renewed (a long migration under way).
    Nothing was changed by this call; run it again once the other one is done. A
    process killed while migrating holds the lock one minute at most."""


class ThreadLockTimeout(TimeoutError):
    """``lock_thread`` did not get the thread's lock within its timeout: another process
    or task holds it. Nothing was run under the lock."""


class DatabaseURLError(ValueError):
    """A database URL (or SQLite path) the saver refuses, at construction: one that
    SQLAlchemy itself would reject or read as something else than it looks like, such as
    ``sqlite://relative.db`` (two slashes: SQLAlchemy refuses a host on SQLite) or an empty
    string. The message lists the valid forms; nothing was opened or created.

    Also raised before a connection is made when the URL's query string holds an
    argument the driver's ``connect`` has no parameter for (PyMySQL and asyncmy:
    ``mysql://host/db?bogus=1`` was a ``TypeError`` in the driver); the message names the
    arguments, never their values. And at the first connection to a SQLite file whose
    folder does not exist: the message names the file and the folder.

    Refused at construction too: a user name or password holding an unencoded ``@``
    (the message shows none of it and says to write ``%40``), text that is neither a
    URL, a file path nor a valid libpq connection string (``host:port/db`` without a
    scheme, an unknown libpq keyword).
    """


class UnsupportedDriverError(DatabaseURLError):
    """A URL naming a driver the saver cannot use (unknown to it, or known not to work,
    such as ``mysql+aiomysql``), or an engine given for the wrong side (an async driver's
    engine as ``engine=``). The message names the driver to use instead."""


class DriverNotInstalledError(UnsupportedDriverError, ImportError):
    """The driver a URL needs is not installed: the one it names, or, for the other side
    (sync or async), any driver of its dialect. The message names the extra or package to
    install, with the command for the package index (``pip install
    "langgraph-checkpoint-sqlalchemy[postgres]"``) and for a checkout of the repository
    (``pip install -e ".[postgres]"``). Also an ``ImportError``."""


class DowngradeRefusedError(RuntimeError):
    """A schema downgrade would lose data that the older revision cannot hold (for
    example a thread id longer than 255 characters below ``0003_long_names``). Nothing
    was changed; the message names what to delete first, or stay at the revision."""


class ValueTooLargeError(ValueError):
    """A value (channel value or pending write) larger than the database accepts in one
    statement. Nothing of the call that raised it was stored; the message names the
    server setting to raise."""


class UnsupportedDialectError(DatabaseURLError):
    """Raised for a database URL whose dialect the query builder does not know.

    Supported: ``sqlite``, ``postgresql`` (``postgres``) and ``mysql``/``mariadb``.
    """


class UnknownSourceError(ValueError):
    """:func:`open_source` found no checkpoint tables it can read at the URL (or found
    several kinds and was not told which one to read: pass ``kind``)."""


class ExportFormatError(ValueError):
    """An import file that is not an export of this library: wrong first line, unknown
    format or version, or a line that is not a checkpoint record (the message gives the
    line number)."""


class IncompleteExportError(ExportFormatError):
    """An export file that cannot be proved whole: it does not close with its end
    record (an interrupted export, a cut file, or a version 1 or 2 file, which has
    none), its counts disagree with its lines, or a thread's lines are split or unclosed.
    Nothing of the file was imported; the message says what to do (export again, or
    accept the file as it is with ``allow_incomplete``)."""
