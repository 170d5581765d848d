"""Errors as the command line shows them: :func:`explain` turns an exception a user can
fix into ``error: <what happened>. <what to do>`` and an exit code (see :mod:`.cli`),
:func:`one_line` masks every secret of the URLs given and keeps it to one line.

Runs only when a command failed: the SQLAlchemy and Alembic errors it tells apart are
imported then, not when the parser is built.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from langgraph.checkpoint.sqlalchemy import errors
from langgraph.checkpoint.sqlalchemy._codec.display import masked_text
from langgraph.checkpoint.sqlalchemy.cli.common import CommandError, engine_url, masked, sentence

if TYPE_CHECKING:
    from sqlalchemy.exc import DBAPIError

__all__ = ["explain", "one_line"]

#: The package whose errors are ours (this module is in its ``cli`` sub-package).
_PACKAGE = errors.__name__.rpartition(".")[0]

#: Typed errors of this library that mean "found something else than needed" (exit 1);
#: its other ValueErrors are bad input (exit 2).
_NOT_FOUND: tuple[type[BaseException], ...] = (
    errors.SchemaOutOfDateError,
    errors.ThreadNotEmptyError,
    errors.CheckpointDecodeError,
    errors.CheckpointHistoryError,
    errors.CheckpointConflictError,
    errors.CheckpointConnectionError,
    errors.ThreadLockTimeout,
)


def _drivers() -> dict[str, str]:
    """Driver module -> what to install, for a driver module a raw ImportError names: the
    dialects' own hints."""
    from langgraph.checkpoint.sqlalchemy.dialects import DIALECTS

    return {
        module.partition(".")[0]: install
        for dialect in DIALECTS.values()
        for module, install in dialect.driver_modules.values()
    }


def _ours(e: BaseException) -> bool:
    return type(e).__module__.startswith(_PACKAGE)


def explain(e: BaseException, url: str | None = None) -> tuple[str, int] | None:
    """The one-line message and exit code of an error a user can fix, or None for a bug.

    Args:
        e: The exception a command raised.
        url: The database URL the command was using, if known (shown masked).
    """
    if isinstance(e, CommandError):
        return str(e), e.code
    # Only an error needs these (a command that failed has mostly imported them already).
    from alembic.util import CommandError as AlembicCommandError

    from langgraph.checkpoint.sqlalchemy import migrate
    from sqlalchemy.exc import ArgumentError, DBAPIError, NoSuchModuleError
    from sqlalchemy.exc import TimeoutError as PoolTimeoutError

    at = f" at {masked(engine_url(url))}" if url else ""
    lost = isinstance(e, errors.CheckpointConnectionError)
    if (
        lost
        and not isinstance(e, errors.CheckpointReadOnlyError)
        and isinstance(e.__cause__, DBAPIError)
    ):
        return explain(e.__cause__, url)  # the driver's own words
    if isinstance(e, _NOT_FOUND):
        return str(e), 1
    if isinstance(e, NoSuchModuleError):
        return (
            f"unknown database driver: {sentence(e)} Use a driver SQLAlchemy documents, e.g. "
            "postgresql+psycopg://, mysql+pymysql://, sqlite:///path.db",
            2,
        )
    if isinstance(e, ArgumentError):
        return (
            f"bad database URL: {sentence(e)} Use e.g. sqlite:///path.db or postgresql://host/db",
            2,
        )
    if isinstance(e, ImportError) and not _ours(e):
        module = (e.name or "").split(".")[0]
        drivers = _drivers()
        if module in drivers:
            return (
                f"the database driver {module!r} named by the URL is not installed. Install "
                f"it: {drivers[module]}",
                2,
            )
        return f"{sentence(e)} Install the missing package", 2
    typed = _typed(e, url) if isinstance(e, DBAPIError) else None
    if typed is not None:  # the saver's own error for it (one line, exit 1)
        return str(typed), 1
    if isinstance(e, DBAPIError):
        detail = str(e.orig if e.orig is not None else e)
        if e.statement is None or isinstance(e.orig, ConnectionError):
            return (
                f"cannot connect to the database{at}: {sentence(detail)} Check that the server is "
                "running, that the database exists (create it first, e.g. CREATE DATABASE) "
                "and that the URL, user and password are right",
                1,
            )
        return f"the database{at} failed: {sentence(detail)} Check the database and retry", 1
    if isinstance(e, PoolTimeoutError):
        return f"the database{at} did not answer: {sentence(e)} Retry later", 1
    if isinstance(e, AlembicCommandError):
        known = ", ".join(sorted(migrate.known_revisions()))
        return f"{sentence(e)} Known revisions: {known}, head, base", 2
    if _ours(e):
        return str(e), 2 if isinstance(e, (ValueError, TypeError, ImportError)) else 1
    if isinstance(e, OSError) and not isinstance(e, ConnectionError):
        name = f"{e.filename}: " if e.filename else ""
        return f"{name}{sentence(e.strerror or e)} Check the path and its permissions", 2
    return None


def _typed(e: DBAPIError, url: str | None) -> Exception | None:
    """The typed error the saver raises for ``e`` (a full disk, a read-only SQLite file),
    for a driver error a command met on an engine of its own (``upgrade``), or None."""
    from langgraph.checkpoint.sqlalchemy.dialects import query_builder
    from sqlalchemy.engine import URL

    sync = engine_url(url) if url else None
    if not isinstance(sync, URL):
        return None
    try:
        qb = query_builder(sync.get_backend_name())
    except errors.UnsupportedDialectError:
        return None
    return qb.translate_error(e, sync)


def one_line(message: str, urls: Sequence[str]) -> str:
    """``message`` on one line, with the secrets of each of ``urls`` masked wherever the
    message quotes them, whole or in part (an error may show part of a URL, e.g. a URL
    taken for a revision): see :func:`.display.masked_text`."""
    return " ".join(masked_text(message, *urls).split())
