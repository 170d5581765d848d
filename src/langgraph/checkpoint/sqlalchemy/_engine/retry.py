"""Retries through transient failures: which database errors are retried, the pause
before each new attempt, and the typed error raised when time is up (:class:`Retry`,
used by :class:`~._engine.runner.Runner` for every operation of the saver), each retried
failure logged (:data:`LOG`) and given to the owner's ``on_retry`` callback."""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from typing import Any

from langgraph.checkpoint.sqlalchemy._codec.configs import OnRetry
from langgraph.checkpoint.sqlalchemy._codec.display import masked_text, shown_url
from langgraph.checkpoint.sqlalchemy.dialects import QueryBuilder
from langgraph.checkpoint.sqlalchemy.errors import (
    CheckpointConnectionError,
    CheckpointContentionError,
    CheckpointReadOnlyError,
    RetryEvent,
)
from sqlalchemy.engine import URL
from sqlalchemy.exc import DBAPIError

__all__ = ["LOG", "RETRY_TIMEOUT", "Retry"]

#: The logger of the saver's retries (the store passes its own,
#: ``langgraph.store.sqlalchemy.retry``): a WARNING per retried failure, an ERROR when a
#: call gives up (docs/observability.md).
LOG = logging.getLogger("langgraph.checkpoint.sqlalchemy.retry")

#: Default of the saver's ``retry_timeout``: seconds an operation is retried through
#: transient failures. A PostgreSQL promotion (the standby takes over within seconds) or
#: a Galera node rejoining fits in it.
RETRY_TIMEOUT = 15.0
#: Longest pause between two attempts, in seconds.
_MAX_PAUSE = 1.0


def _YES() -> bool:
    return True


class Retry:
    """The retry of one call through transient failures: which errors are retried, the
    pause before each new attempt, and the typed error when time is up.

    Transient (the dialect's :meth:`.QueryBuilder.transient`): a lost or refused
    connection, a read-only server (a standby; a promotion under way), a transaction
    that lost to a concurrent one (deadlock, serialization failure, Galera certification
    conflict). Every operation of the saver is idempotent (upserts, first-write-wins
    inserts, deletes, and a conflict check that accepts its own checkpoint), so running
    it again stores nothing twice; a failed attempt's transaction was rolled back.

    The first retry of a lost connection is at once (a pool's connections from before a
    server restart fail one after the other; SQLAlchemy drops them all at the first);
    then pauses double from 50 ms up to 1 s, with jitter, until ``timeout`` seconds have
    passed since the first failure. At least one retry is made, whatever ``timeout``.

    Until the engines have once reached the database (``reached`` False), a failure to
    connect is not retried: a wrong host or port, or a server not started, fails at
    once with a :class:`CheckpointConnectionError` naming every server the URL names
    (each host and port of a host list, a socket folder), instead of after ``timeout``
    seconds. Outages after the first connection are ridden through.

    Each retried failure is logged at WARNING on ``log`` (what failed, in the driver's
    words, the attempt, the seconds left; the URL and the words masked; no traceback),
    and giving up at ERROR with the typed error raised; each is also given to
    ``on_retry`` as a :class:`RetryEvent`, in the thread that retries (an exception it
    raises is logged and ignored). Errors that are not retried are not logged here.

    Args:
        qb: The dialect's query builder.
        timeout: Seconds to keep retrying.
        url: The database's URL, named in the errors (password hidden).
        reached: Whether the engines have connected to the database before: asked
            only when an attempt fails (no cost on a call that succeeds, and the answer
            of that moment: a call whose first connection succeeded is retried).
        on_retry: Called with a :class:`RetryEvent` for each retried failure, or None.
        log: The logger of the retries.
    """

    __slots__ = ("_attempt", "_log", "_on_retry", "_reached", "_started", "_timeout", "_url", "qb")

    def __init__(
        self,
        qb: QueryBuilder,
        timeout: float,
        url: Any,
        *,
        reached: Callable[[], bool] = _YES,
        on_retry: OnRetry | None = None,
        log: logging.Logger = LOG,
    ) -> None:
        self.qb = qb
        self._timeout = timeout
        self._url = url
        self._reached = reached
        self._on_retry = on_retry
        self._log = log
        self._started = time.monotonic()
        self._attempt = 0

    def pause(self, error: BaseException) -> float:
        """Seconds to wait before the next attempt after ``error``.

        Raises:
            CheckpointReadOnlyError: The server stayed read-only for the whole time.
            CheckpointConnectionError: The connection failed for the whole time, or at
                once when the database was never reached.
            CheckpointContentionError: Every attempt lost to a concurrent transaction.
            DatabaseURLError: The database cannot be opened as the URL says (a SQLite
                file in a folder that does not exist).
            CheckpointStorageFullError: The database's disk is full (not retried).
            CheckpointFileReadOnlyError: A SQLite file this process may not write.
            Exception: ``error`` itself (or its typed translation, such as
                :class:`ValueTooLargeError`) when it is not transient.
        """
        if isinstance(error, DBAPIError):
            if not self._reached():
                # Never connected: whatever the driver says came from opening the first
                # connection (no statement runs without one), whether or not the dialect
                # counts it as a disconnect (a refused port, a wrong password, no such
                # database): raised at once, typed (the dialect's own words for a cause it
                # knows, such as a database that does not exist), naming host and port.
                raise (
                    self.qb.open_error(self._url, error)
                    or self.qb.translate_error(error, self._url)
                    or self._unreached(error)
                ) from None
            kind = self.qb.transient(error)
            if kind is None:
                raise self.qb.translate_error(error, self._url) or error from error
        elif isinstance(error, CheckpointConnectionError):
            raise error
        else:
            kind = "connection"  # the driver's own (asyncpg raises OSError at connect)
        if kind == "connection" and not self._reached():
            raise self._unreached(error) from None
        attempt, self._attempt = self._attempt, self._attempt + 1
        elapsed = time.monotonic() - self._started
        if attempt == 0 and kind == "connection":
            pause = 0.0
        else:
            pause = min(0.05 * float(1 << min(attempt, 10)), _MAX_PAUSE)
            pause *= random.uniform(0.5, 1.0)
            if attempt > 0 and elapsed + pause > self._timeout:
                given_up = self._give_up(kind, error, elapsed)
                self._report(kind, error, elapsed, pause, given_up)
                raise given_up from error
        self._report(kind, error, elapsed, pause, None)
        return pause

    def _report(
        self,
        kind: str,
        error: BaseException,
        elapsed: float,
        pause: float,
        given_up: Exception | None,
    ) -> None:
        """Log the failed attempt (WARNING; ERROR when ``given_up``, the error about to be
        raised) and give it to ``on_retry``."""
        remaining = max(self._timeout - elapsed, 0.0)
        log = self._log
        if given_up is not None:
            log.error("giving up (%s failure): %s: %s", kind, type(given_up).__name__, given_up)
        elif log.isEnabledFor(logging.WARNING):
            log.warning(
                "attempt %d failed (%s failure) at %s: %s; retrying in %.2f s "
                "(%.1f s left of retry_timeout %g s)",
                self._attempt,
                kind,
                shown_url(self._url),
                _words(error, self._url),
                pause,
                remaining,
                self._timeout,
            )
        if self._on_retry is not None:
            event = RetryEvent(self._attempt, kind, elapsed, remaining, error, given_up is not None)
            try:
                self._on_retry(event)
            except Exception:  # a metrics hook must not change what the call does
                log.exception("the on_retry callback %r raised (ignored)", self._on_retry)

    def _unreached(self, error: BaseException) -> CheckpointConnectionError:
        """The error of a first connection that failed: every server the URL names as
        the driver reads it (a host list host by host, a socket folder as that folder:
        the dialect's :meth:`~.QueryBuilder.servers`), the driver's words, what to check;
        not retried (a typo does not heal)."""
        url = self._url
        server = "; ".join(self.qb.servers(url)) if isinstance(url, URL) else ""
        cause = _words(error, self._url)
        cause += "" if cause.endswith((".", "?", "!")) else "."
        return CheckpointConnectionError(
            f"cannot connect to the database at {shown_url(url)}"
            + (f" ({server})" if server else "")
            + f": {cause} It has never been reached by this saver or store, so this was "
            "not retried: check that the server is running, that the database exists "
            "(create it first, e.g. CREATE DATABASE) and that the host, port, user and "
            "password of the URL are right. (Once connected, outages are retried for "
            "retry_timeout seconds.)"
        )

    def _give_up(self, kind: str, error: BaseException, elapsed: float) -> Exception:
        where = shown_url(self._url)
        cause = _words(error, self._url)
        tried = f"{self._attempt} attempts over {elapsed:.1f} s"
        if kind == "read-only":
            return CheckpointReadOnlyError(
                f"the database server at {where} is read-only ({tried}): it is a standby, "
                "or a primary being demoted. Writes need the primary: point the URL at it, "
                "or list every host with target_session_attrs=read-write. Nothing of this "
                f"call was stored. ({cause})"
            )
        if kind == "conflict":
            return CheckpointContentionError(
                f"the database at {where} refused this call's transaction for a "
                f"concurrent one on every attempt ({tried}): {cause}. Nothing of it was "
                "stored; retry later, or serialise the runs (saver.lock_thread)."
            )
        return CheckpointConnectionError(
            f"cannot reach the database at {where} ({tried}): {cause}. Nothing of this "
            "call was stored half-way (its transaction was rolled back); retry later, or "
            "give the saver a longer retry_timeout."
        )


def _words(error: BaseException, url: Any) -> str:
    """The driver's words about ``error`` (its class and message, not SQLAlchemy's
    statement and parameters), on one line, URLs' passwords and the secrets of ``url``
    (the URL connected to) masked."""
    orig = getattr(error, "orig", None) or error
    return " ".join(masked_text(f"{type(orig).__name__}: {orig}", url).split())
