"""SQLite's database file: where a URL's file is, and the typed errors of a file that
cannot be opened, written or grown (a mixin of the SQLite query builder,
:mod:`.sqlite`).

SQLite reports a full disk and a write refused by the file system alike for every cause
(``SQLITE_FULL``: the disk, or ``PRAGMA max_page_count``; ``SQLITE_READONLY``: a file
or a folder this process may not write, a ``mode=ro`` URL, ``PRAGMA query_only``): the
messages here name the file and, where the file system tells, which cause it is, never
the SQL.
"""

from __future__ import annotations

import os
from typing import Any

from langgraph.checkpoint.sqlalchemy.dialects._errors import NOTHING_STORED, DriverErrors
from langgraph.checkpoint.sqlalchemy.errors import (
    CheckpointFileReadOnlyError,
    CheckpointStorageFullError,
    DatabaseURLError,
)
from sqlalchemy.engine import URL
from sqlalchemy.exc import DBAPIError

__all__ = ["SQLiteFiles"]

#: SQLite's primary result codes (the low byte of an extended code).
_READONLY, _FULL = 8, 13
#: ``SQLITE_READONLY_DIRECTORY``: the folder of the database is not writable.
_READONLY_DIRECTORY = 1544


def _writable(path: str) -> bool:
    """Whether this process (its effective user) may write ``path``."""
    return os.access(path, os.W_OK, effective_ids=os.access in os.supports_effective_ids)


def _files(path: str | None) -> list[str]:
    """The database file ``path`` and the files SQLite writes beside it."""
    return [path + suffix for suffix in ("", "-wal", "-shm", "-journal")] if path else []


class SQLiteFiles(DriverErrors):
    """The file of a SQLite URL and the typed errors of SQLite's result codes."""

    @classmethod
    def database_file(cls, url: URL) -> str | None:
        """The file of ``sqlite:///path``; None for an in-memory database or a ``file:``
        URI (``uri=true``: its path is SQLite's to read)."""
        path = url.database or ""
        if url.query.get("uri") or not path or path == ":memory:" or path.startswith("file:"):
            return None
        return os.path.abspath(path)

    @classmethod
    def named_file(cls, url: URL | None) -> str | None:
        """The file an error names: :meth:`database_file`, or the path of a ``file:``
        URI (``file:/abs``, ``file:rel``, ``file:///abs``); None in memory."""
        if url is None or url.query.get("vfs") == "memdb" or url.query.get("mode") == "memory":
            return None
        database = url.database or ""
        if not database.startswith("file:"):
            return cls.database_file(url)
        rest = database[len("file:") :]
        rest = "/" + rest[2:].partition("/")[2] if rest.startswith("//") else rest
        return os.path.abspath(rest) if rest not in ("", ":memory:") else None

    @classmethod
    def open_error(cls, url: URL, error: DBAPIError) -> Exception | None:
        """SQLite's "unable to open database file" for a file whose folder does not
        exist (SQLite creates the file, never its folder): a :class:`DatabaseURLError`
        naming the file and the folder; for a new file in a folder this process may not
        write: a :class:`CheckpointFileReadOnlyError` naming the folder."""
        path = cls.database_file(url)
        if path is None or "unable to open database file" not in str(error.orig):
            return None
        folder = os.path.dirname(path)
        if os.path.isdir(folder):
            if os.path.exists(path) or _writable(folder):
                return None
            return CheckpointFileReadOnlyError(
                f"cannot create the SQLite database {path}: its folder {folder} is not "
                "writable by this process. Nothing was created. Give the user running "
                "this process write permission on the folder, or name a file in a folder "
                "it may write.",
                path=path,
            )
        return DatabaseURLError(
            f"cannot open the SQLite database {path}: its folder {folder} does not exist "
            "(SQLite creates the file, not its folder). Create the folder (mkdir -p "
            f"{folder}) or fix the path in the URL; nothing was created."
        )

    @classmethod
    def error_code(cls, error: BaseException | None) -> Any:
        """SQLite's extended result code (``sqlite_errorcode``, Python 3.11 and later);
        None before."""
        return getattr(error, "sqlite_errorcode", None)

    def _says(self, error: DBAPIError, primary: int, words: str) -> bool:
        """Whether ``error`` has SQLite's primary result code ``primary`` (told by its
        message where Python gives no code: SQLite's messages are fixed English)."""
        code = self.error_code(error.orig)
        return words in str(error.orig) if code is None else code & 0xFF == primary

    def storage_full(self, error: DBAPIError) -> bool:
        """``SQLITE_FULL``: "database or disk is full"."""
        return self._says(error, _FULL, "database or disk is full")

    def full_error(self, error: DBAPIError, url: URL | None) -> CheckpointStorageFullError:
        """A full disk, or ``PRAGMA max_page_count`` reached, naming the file."""
        path = self.named_file(url)
        return CheckpointStorageFullError(
            f"the SQLite database {path or '(in memory)'} is full: SQLite reported "
            '"database or disk is full" (SQLITE_FULL): the disk holding it has no space '
            "left, or the database reached its page limit (PRAGMA max_page_count). "
            f"{NOTHING_STORED} Free space on that disk, or move the database file to a "
            "larger disk (with its -wal file, while no process has it open), then retry.",
            database=path or ":memory:",
        )

    def translate_error(self, error: DBAPIError, url: URL | None = None) -> Exception | None:
        """``SQLITE_READONLY`` ("attempt to write a readonly database"): a
        :class:`CheckpointFileReadOnlyError` naming the file and, where it can tell,
        what is not writable; else the base's answer (``SQLITE_FULL``)."""
        if not self._says(error, _READONLY, "attempt to write a readonly database"):
            return super().translate_error(error, url)
        path = self.named_file(url)
        folder = os.path.dirname(path) if path else ""
        read_only = f"to only read it, open it read-only: sqlite:///file:{path}?mode=ro&uri=true"
        query = url.query if url is not None else {}
        if query.get("mode") == "ro" or query.get("immutable") in ("1", "true"):
            why = "its URL opens it read-only (mode=ro or immutable=1)"
            fix = "open it without mode=ro or immutable=1 to write to it"
        elif folder and (
            self.error_code(error.orig) == _READONLY_DIRECTORY or not _writable(folder)
        ):
            why = (
                f"its folder {folder} is not writable by this process, and SQLite makes "
                "the database's -wal and -shm (or -journal) files there: in WAL mode, as "
                "the saver sets it, not even a read works without them"
            )
            fix = (
                "give the user running this process write permission on the folder; to "
                "only read a database no process writes, open it as immutable: "
                f"sqlite:///file:{path}?immutable=1&uri=true"
            )
        elif locked := [f for f in _files(path) if os.path.exists(f) and not _writable(f)]:
            # (-wal and -shm files made while the database was read-only are too)
            one = len(locked) == 1
            why = f"{', '.join(locked)} {'is' if one else 'are'} not writable by this process"
            them = "it" if one else "them"
            fix = f"give the user running this process write permission on {them}; {read_only}"
        else:
            why = "the connection is read-only (PRAGMA query_only, or opened read-only)"
            fix = f"fix the connection's settings or the file's permissions; {read_only}"
        return CheckpointFileReadOnlyError(
            f"cannot write the SQLite database {path or '(in memory)'}: {why} (SQLite: "
            '"attempt to write a readonly database"). Nothing of this call was stored. '
            f"To fix it, {fix}.",
            path=path,
        )
