"""The short door of the graph step's one-statement operations.

A graph step reads a checkpoint (``get_tuple``), stores one (``put``) and stores pending
writes (``put_writes``): each one statement, with no transaction around it
(:attr:`.Access.READ_ONE`, :attr:`.Access.WRITE_ONE`). Through SQLAlchemy's
``Connection`` each costs, besides the statement, a ``Connection`` object, a
``RootTransaction`` with its begin and commit events, and the AUTOCOMMIT toggles of the
execution options: measured 61 us of a 320 us ``put_writes`` on SQLite, against 17 us for
the pool's checkout and check-in alone.

:class:`Lane` runs such an operation on a connection checked out of the engine's own pool
(``Engine.raw_connection()``: its checkout events, ``pool_pre_ping``, reset-on-return all
kept) and hands it a :class:`LaneConnection`, which the statements of
:mod:`._engine.cursor` use as they use a ``Connection``. What it does not run, it leaves to
the full door:

- a statement that needs ``Connection.execute`` (the first read of MySQL's packet limit, a
  statement with an expanding ``IN``) raises :class:`Detour` before anything was run on
  the lane, and the operation is run again through the full door;
- an engine with listeners the lane would skip (cursor, execute, connect, begin, commit,
  rollback events other than the dialect's own), with SQL logging on (``echo``), or with
  execution options the lane does not know, never takes it;
- only operations marked :func:`capable` take it: one statement, or reads.

On a sync engine with a ``QueuePool`` of at least :data:`MIN_POOL` connections and no
per-checkout work (no ``checkout``,
``checkin`` or ``reset`` listener, no ``pool_pre_ping``, no ``pool_recycle``), where the
dialect tells whether a connection is in a transaction
(:data:`~.dialects.base.IDLE_OPTION`: SQLite, PostgreSQL), the lane keeps one connection
checked out between calls, as ``SqliteSaver`` and ``SqliteStore`` keep theirs: a call
costs no checkout and check-in (the pool's queue, its fairy and its reset were a third
of a lone ``get`` on SQLite) and, on PostgreSQL, no AUTOCOMMIT toggles (set once while
held). A thread that finds it busy goes through the pool; a call that was interrupted,
invalidated the connection (a lost server: the retry then goes through the pool) or left
a transaction open gives it back to the pool (reset there); a disposed pool's is closed,
a parent's seen after a fork is left alone; the owner's ``close`` returns it
(:meth:`Lane.release`).

Transactions are the same as through the full door: on PostgreSQL the connection is set
to AUTOCOMMIT for the statement and reset after it (what the ``isolation_level`` execution
option does), on SQLite the statement runs in the driver's autocommit mode (our engines
issue ``BEGIN`` themselves), on MySQL/MariaDB a write is committed and a read rolled back
on return. A driver error goes through SQLAlchemy's own handler (``handle_error``
listeners, wrapping in ``DBAPIError``, invalidating a dropped connection and the pool's
older ones), through a ``Connection`` made around the checked-out connection only then.

The SQLAlchemy private names this needs (the error handlers, the pool's settings, the
listener collections) are read through :mod:`..dialects._sqlalchemy_private`.
"""

from __future__ import annotations

import logging
import os
import threading
import weakref
from collections.abc import Callable, Mapping
from typing import Any, NoReturn, TypeVar

from langgraph.checkpoint.sqlalchemy.dialects import (
    IDLE_OPTION,
    NO_TRANSACTION_OPTION,
    WRITE_OPTION,
)
from langgraph.checkpoint.sqlalchemy.dialects._sqlalchemy_private import (
    handle_connect_error,
    handle_dbapi_error,
    has_listeners,
    listeners_are,
    pool_max_overflow,
    pool_pre_pings,
    pool_recycle,
)
from sqlalchemy import Connection, Engine
from sqlalchemy.pool import Pool, QueuePool

__all__ = ["CAPABLE", "MIN_POOL", "Detour", "Lane", "LaneConnection", "capable"]

F = TypeVar("F", bound=Callable[..., Any])

#: The operations that may run on a :class:`Lane` (see :func:`capable`).
CAPABLE: set[Callable[..., Any]] = set()

#: Execution options the lane reproduces: the schema map (read by the compiled
#: statements), AUTOCOMMIT (set around the statement) and our own markers.
_KNOWN = frozenset(
    {"schema_translate_map", "isolation_level", NO_TRANSACTION_OPTION, WRITE_OPTION, IDLE_OPTION}
)

_INFO = logging.INFO

#: Engine events a lane would not fire (``begin`` is checked against the dialect's own).
_SKIPPED = (
    "before_cursor_execute",
    "after_cursor_execute",
    "before_execute",
    "after_execute",
    "engine_connect",
    "commit",
    "rollback",
    "set_connection_execution_options",
)


def capable(op: F) -> F:
    """Mark ``op`` as one that may run on a :class:`Lane`: a read, or a write of one
    statement (atomic on its own) whose statements all go through
    :mod:`._engine.cursor`, and that calls ``Connection.execute`` only before its first
    statement (a :class:`Detour` there re-runs it through the full door)."""
    CAPABLE.add(op)
    return op


class Detour(Exception):
    """The operation needs the full door (raised before the lane ran a statement of a
    write)."""


class LaneConnection:
    """What :mod:`._engine.cursor` uses of a ``Connection``, on a lane's checked-out
    connection (see the module)."""

    __slots__ = ("_options", "connection", "dbapi", "dialect", "dispatch", "engine", "ran")

    def __init__(self, engine: Engine, fairy: Any, options: Mapping[str, Any]) -> None:
        self.engine = engine
        self.dialect = engine.dialect
        self.dispatch = engine.dispatch
        self.connection = fairy
        #: The DBAPI connection itself: its cursors and commit without the pool's proxy
        #: (whose every attribute goes through its ``__getattr__`` hook).
        self.dbapi = fairy.dbapi_connection
        self._options = options
        self.ran = False

    def get_execution_options(self) -> Mapping[str, Any]:
        """The execution options of the access (engine's and the door's)."""
        return self._options

    def in_transaction(self) -> bool:
        """True: nothing to begin (the statement runs as the access says, see the
        module). Called before each statement: notes that one ran."""
        self.ran = True
        return True

    def execute(self, *_args: Any, **_kwargs: Any) -> NoReturn:
        """Not on the lane: :class:`Detour`."""
        raise Detour()

    def handle_error(
        self, e: BaseException, statement: str | None, parameters: Any, cursor: Any
    ) -> NoReturn:
        """Raise the driver's error ``e`` as ``Connection.execute`` would (see
        :func:`~..dialects._sqlalchemy_private.handle_dbapi_error`), through a
        ``Connection`` made around the checked-out connection now."""
        conn = Connection(self.engine, connection=self.connection)
        handle_dbapi_error(conn, e, statement, parameters, cursor)


class Lane:
    """The short door of one engine (sync, or the sync face of an async one, driven
    inside ``greenlet_spawn``).

    Args:
        engine: The engine (the base one; the lane reads its pool and listeners).
        options: Execution options of the two one-statement accesses, by
            :class:`.Access` (keys only compared, not imported: the doors import this
            module).
    """

    __slots__ = (
        "__weakref__",  # in _LANES
        "_autocommit",
        "_begin",
        "_forked",
        "_held",
        "_held_lock",
        "_held_pid",
        "_held_pool",
        "_holds",
        "_idle",
        "_options",
        "dialect",
        "engine",
    )

    def __init__(self, engine: Engine, options: Mapping[Any, Mapping[str, Any]]) -> None:
        self.engine = engine
        self.dialect = engine.dialect
        base = dict(engine.get_execution_options())
        self._options: dict[Any, dict[str, Any] | None] = {}
        self._autocommit: dict[Any, bool] = {}
        for access, opts in options.items():
            merged = {**base, **opts}
            level = merged.get("isolation_level")
            known = set(merged) <= _KNOWN and level in (None, "AUTOCOMMIT")
            self._options[access] = merged if known else None
            self._autocommit[access] = level == "AUTOCOMMIT"
        # The dialect's own begin listener (SQLite's BEGIN IMMEDIATE) skips one-statement
        # accesses; any other begin listener closes the lane.
        self._begin = tuple(engine.dispatch.begin)
        # The held connection (see the module): the dialect's idle check, the same for
        # both accesses, as is their AUTOCOMMIT (kept on the held connection).
        given = [o for o in self._options.values() if o is not None]
        idle = given[0].get(IDLE_OPTION) if given else None
        same = (
            len(given) == len(self._options)
            and all(o.get(IDLE_OPTION) is idle for o in given)
            and len(set(self._autocommit.values())) == 1
        )
        self._idle: Callable[[Any], bool | None] | None = idle if same else None
        self._holds = self._idle is not None and _holds(engine)
        self._held: Any = None
        self._held_pid = 0
        #: The pool the held connection came from (a ``dispose()`` replaces the engine's).
        self._held_pool: Pool | None = None
        self._held_lock = threading.Lock()
        #: Held connections of a parent process, seen after a fork: kept, never used or
        #: closed here (the parent's; what ``Engine.dispose(close=False)`` does).
        self._forked: list[Any] = []
        _LANES.add(self)

    def open(self, access: Any) -> bool:
        """Whether ``access`` may take the lane now (no listener it would skip, no SQL
        logging)."""
        if self._options.get(access) is None:
            return False
        engine = self.engine
        # SQL logging on (echo=True or "debug", the sqlalchemy.engine logger at INFO or
        # below, a logging_name's logger): the very check by which a Connection decides
        # to log its statements
        if engine.logger.isEnabledFor(_INFO):
            return False
        dispatch = engine.dispatch
        if has_listeners(dispatch, _SKIPPED):
            return False
        # no begin listener, or only the dialect's own
        return listeners_are(dispatch, "begin", self._begin)

    def run(self, access: Any, write: bool, op: Callable[..., Any], args: tuple[Any, ...]) -> Any:
        """``op(conn, *args)`` on a checked-out connection; a write committed.

        Raises:
            Detour: ``op`` needs the full door (nothing was run).
            sqlalchemy.exc.DBAPIError: The driver's error, as SQLAlchemy wraps it.
        """
        options = self._options[access]
        assert options is not None
        if self._holds and self._held_lock.acquire(blocking=False):
            try:
                if not _pool_listened(self.engine.pool):
                    return self._run_held(access, options, write, op, args)
                held = self._current()
                if held is not None:  # a pool listener came since: per-call checkouts
                    self._give_back(held, access)
            finally:
                self._held_lock.release()
        fairy = self._checkout(self.engine.pool)
        try:
            conn = LaneConnection(self.engine, fairy, options)
            if self._autocommit[access]:
                self._set_autocommit(conn, fairy)
            return self._call(conn, access, write, op, args)
        finally:
            self._return(fairy, access)

    def _run_held(
        self,
        access: Any,
        options: Mapping[str, Any],
        write: bool,
        op: Callable[..., Any],
        args: tuple[Any, ...],
    ) -> Any:
        """:meth:`run` on the held connection (the caller holds ``_held_lock``): checked
        out once (and set to AUTOCOMMIT once, where the accesses are) and kept, so that a
        call costs no checkout, check-in or isolation toggles. Given back (reset) when it
        was invalidated, left a transaction open or was interrupted."""
        fairy = self._current()
        fresh = fairy is None
        if fairy is None:
            pool = self.engine.pool
            fairy = self._checkout(pool)
            self._held, self._held_pid, self._held_pool = fairy, os.getpid(), pool
        conn = LaneConnection(self.engine, fairy, options)
        ready = False
        try:
            if fresh and self._autocommit[access]:
                self._set_autocommit(conn, fairy)
            ready = True
            result = self._call(conn, access, write, op, args)
        except Exception:
            if not (ready and self._reusable(fairy)):
                self._give_back(fairy, access)
            raise
        except BaseException:  # interrupted: where the driver stood is unknown
            self._give_back(fairy, access)
            raise
        if not self._reusable(fairy):
            self._give_back(fairy, access)
        return result

    def _current(self) -> Any:
        """The held connection, or None; one this process's pool cannot take back is
        forgotten: a parent's seen after a fork kept unused (never closed here), a
        disposed pool's closed (not returned to it)."""
        fairy = self._held
        if fairy is None:
            return None
        if self._held_pid != os.getpid():
            self._forked.append(fairy)
        elif self._held_pool is not self.engine.pool:
            fairy.invalidate()
        else:
            return fairy
        self._held = self._held_pool = None
        return None

    def _checkout(self, pool: Pool) -> Any:
        """A connection from ``pool`` (the engine's current one; a failure as
        SQLAlchemy wraps it)."""
        try:
            return pool.connect()
        except self.dialect.loaded_dbapi.Error as e:
            handle_connect_error(e, self.engine)

    def _set_autocommit(self, conn: LaneConnection, fairy: Any) -> None:
        try:
            self.dialect.set_isolation_level(fairy.dbapi_connection, "AUTOCOMMIT")
        except self.dialect.loaded_dbapi.Error as e:
            conn.handle_error(e, None, None, None)

    def _call(
        self,
        conn: LaneConnection,
        access: Any,
        write: bool,
        op: Callable[..., Any],
        args: tuple[Any, ...],
    ) -> Any:
        """``op(conn, *args)``, a write committed (by the server already, statement by
        statement, where ``access`` is in AUTOCOMMIT); a driver error outside a
        statement (the commit) through SQLAlchemy's handler."""
        try:
            result = op(conn, *args)
            if write and not self._autocommit[access]:
                conn.dbapi.commit()
            return result
        except self.dialect.loaded_dbapi.Error as e:
            conn.handle_error(e, None, None, None)
        except Detour:
            if write and conn.ran:
                raise RuntimeError(
                    f"{op.__name__} needs Connection.execute after its first "
                    "statement: it must not be marked capable"
                ) from None
            raise

    def _reusable(self, fairy: Any) -> bool:
        """Whether the held connection may serve the next call: valid and idle."""
        assert self._idle is not None
        dbapi = fairy.dbapi_connection
        if dbapi is None:  # invalidated
            return False
        idle = self._idle(dbapi)
        if idle is None:  # the driver cannot tell: hold no more
            self._holds = False
        return bool(idle)

    def _give_back(self, fairy: Any, access: Any) -> None:
        """Return the held connection to the pool (:meth:`_return`); held no more."""
        self._held = self._held_pool = None
        self._return(fairy, access)

    def _return(self, fairy: Any, access: Any) -> None:
        """Return a connection to the pool, its isolation level reset where ``access``
        set AUTOCOMMIT; one that cannot be reset is dropped (what the pool does with a
        connection it cannot reset). The pool rolls back what was left open."""
        if self._autocommit[access] and fairy.is_valid:
            try:
                self.dialect.reset_isolation_level(fairy.dbapi_connection)
            except self.dialect.loaded_dbapi.Error:
                fairy.invalidate()
        fairy.close()

    def release(self) -> None:
        """Return the held connection to the pool (the owner's ``close``, before the
        engine's ``dispose``); the next call checks out another."""
        with self._held_lock:
            fairy = self._current()
            if fairy is not None:
                self._give_back(fairy, next(iter(self._options)))


#: Fewest connections a pool must be able to open for a lane to keep one: the one kept,
#: one for the full door, one for a migration's or the caller's own beside it. A pool of
#: one or two (``setup()`` works with a pool of one) keeps nothing, so that a call through
#: the full door never waits for the connection a lane keeps.
MIN_POOL = 3


def _holds(engine: Engine) -> bool:
    """Whether ``engine`` lets a lane keep its connection checked out between calls: a
    sync engine on a ``QueuePool`` that can open :data:`MIN_POOL` connections, with no
    per-checkout work asked for (no ``checkout``, ``checkin`` or ``reset`` listener, no
    ``pool_pre_ping``, no ``pool_recycle``). The dialect must also give its idle check
    (:data:`~.dialects.base.IDLE_OPTION`)."""
    pool = engine.pool
    if not isinstance(pool, QueuePool):
        return False
    overflow = pool_max_overflow(pool)
    return (
        not engine.dialect.is_async
        and (overflow < 0 or pool.size() + overflow >= MIN_POOL)
        and not _pool_listened(pool)
        and not pool_pre_pings(pool)
        and pool_recycle(pool) < 0
    )


def _pool_listened(pool: Any) -> bool:
    """Whether a listener wants each checkout (``checkout``, ``checkin``, ``reset``),
    checked at each call: one registered after the lane was made counts too."""
    return has_listeners(pool.dispatch, _PER_CHECKOUT)


_PER_CHECKOUT = ("checkout", "checkin", "reset")

#: Every :class:`Lane` of the process, for :func:`_after_fork_in_child`.
_LANES: weakref.WeakSet[Lane] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    """In a child process after ``fork()``: another thread of the parent may have been
    in a call on a lane's held connection (holding ``_held_lock``) at the moment of the
    fork; nothing would release it here, and the owner's ``close()`` would wait for it
    forever. The held connection itself is the parent's: :meth:`Lane._current` sets it
    aside (by process id)."""
    for lane in list(_LANES):
        lane._held_lock = threading.Lock()


if hasattr(os, "register_at_fork"):  # not on Windows
    os.register_at_fork(after_in_child=_after_fork_in_child)
