"""Driver errors a user can fix, as typed errors that say what to do (a mixin of the
:class:`~.base.QueryBuilder`).

The portable part: the error code a driver error carries (:meth:`DriverErrors.error_code`),
which codes mean a full disk (:meth:`DriverErrors.storage_full`, each dialect its own
codes), the :class:`~langgraph.checkpoint.sqlalchemy.errors.CheckpointStorageFullError`
raised for them, and the servers a URL names for the error of a first connection that
failed (:meth:`DriverErrors.servers`). Dialects override what differs: their codes, the
wording of a file's errors (SQLite), how a URL names its servers (libpq's host lists).
Called by the retry (``_engine.retry``) and the command line, never on a call that
succeeds.
"""

from __future__ import annotations

from typing import Any, ClassVar

from langgraph.checkpoint.sqlalchemy._codec.display import masked_text, shown_url
from langgraph.checkpoint.sqlalchemy.errors import CheckpointStorageFullError
from sqlalchemy.engine import URL
from sqlalchemy.exc import DBAPIError

__all__ = ["NOTHING_STORED", "DriverErrors"]

#: What every error of a write that failed as a whole says about the data.
NOTHING_STORED = (
    "Nothing of this call was stored (its transaction was rolled back); what was stored "
    "before is intact and can still be read."
)


class DriverErrors:
    """Typed errors for the driver errors a user can fix: a database that cannot be
    opened as its URL says, a full disk, the servers a URL names."""

    #: The server's port when the URL names none (None: no server, SQLite).
    default_port: ClassVar[int | None] = None
    #: Said after :data:`NOTHING_STORED` where a migration is not one transaction.
    migration_note: ClassVar[str] = ""

    @classmethod
    def error_code(cls, error: BaseException | None) -> Any:
        """The driver's code of a database error (SQLSTATE on PostgreSQL, the error
        number on MySQL/MariaDB), or None (the default)."""
        return None

    @classmethod
    def open_error(cls, url: URL, error: DBAPIError) -> Exception | None:
        """A typed error for a connection to ``url`` that failed for a cause the user
        must fix and can be told precisely (SQLite: the file's folder does not exist),
        or None (the default)."""
        return None

    def words(self, error: DBAPIError) -> str:
        """The database's own words about ``error``: the driver's message (never
        SQLAlchemy's statement and parameters), on one line, passwords of URLs masked.
        Dialects add their error code."""
        orig = error.orig if error.orig is not None else error
        return " ".join(masked_text(str(orig)).split())

    def storage_full(self, error: DBAPIError) -> bool:
        """Whether ``error`` is the database reporting a full disk (or a size limit of
        its own reached): each dialect knows its codes. Default: False."""
        return False

    def translate_error(self, error: DBAPIError, url: URL | None = None) -> Exception | None:
        """A typed error for a database error that has a known cause and remedy, or None
        (the error is raised as it is). The default knows a full disk
        (:meth:`storage_full`): :meth:`full_error`.

        Args:
            error: The error SQLAlchemy raised (``error.orig``: the driver's).
            url: The database's URL, named in the message (password hidden), if known.
        """
        if self.storage_full(error):
            return self.full_error(error, url)
        return None

    def full_error(self, error: DBAPIError, url: URL | None) -> CheckpointStorageFullError:
        """The :class:`CheckpointStorageFullError` of a server's full disk: the server, its
        own words, what to do."""
        where = shown_url(url) if url is not None else "its URL"
        return CheckpointStorageFullError(
            f"the database server at {where} has no disk space left for this write: "
            f"{self.words(error).rstrip('.')}. {NOTHING_STORED}{self.migration_note} Free "
            "space on the server's disk (the data directory's, or the tablespace's), or "
            "move the database to a larger disk, then retry.",
            database=where,
        )

    @classmethod
    def servers(cls, url: URL) -> list[str]:
        """Each server ``url`` names, as the driver reads it, for the error of a first
        connection that failed: ``"host h, port p"``; none for a database without a
        server. The default: the URL's host and port (the dialect's default port when it
        names none)."""
        port = url.port or cls.default_port
        if port is None:
            return []
        return [f"host {url.host}, port {port}" if url.host else f"the default host, port {port}"]
