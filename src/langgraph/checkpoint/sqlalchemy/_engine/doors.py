"""The sync door: how an operation reaches the database through a sync engine.

:class:`Access` names how an operation reaches the database; :class:`Doors` holds an
engine's four handles (one per access, each with its execution options) and opens a
connection for an access. :class:`SyncRunner` runs an operation, a sync function on a
``Connection``, through the sync door (checking the schema once and retrying through
transient failures, see :class:`~._engine.retry.Retry`), and runs a plan (:data:`Plan`) of
operations and of the other steps of :mod:`._engine.steps` (pauses, embedding calls).

The saver's :class:`~._engine.runner.Runner` is a :class:`SyncRunner` with the async door beside
it. This module imports neither SQLAlchemy's asyncio extension nor LangGraph, so that a
command that only reads (``threads list``) runs a plan on a sync engine alone
(:func:`.cli.common.open_runner`), through the same door as the saver.
"""

from __future__ import annotations

import enum
import logging
import time
from collections.abc import Callable, Generator, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast

from langgraph.checkpoint.sqlalchemy import migrate
from langgraph.checkpoint.sqlalchemy._codec.configs import OnRetry
from langgraph.checkpoint.sqlalchemy._codec.display import shown_url
from langgraph.checkpoint.sqlalchemy._engine.lane import CAPABLE, Detour, Lane
from langgraph.checkpoint.sqlalchemy._engine.retry import LOG, RETRY_TIMEOUT, Retry
from langgraph.checkpoint.sqlalchemy._engine.steps import Step
from langgraph.checkpoint.sqlalchemy.dialects import DIALECTS, WRITE_OPTION, QueryBuilder
from langgraph.checkpoint.sqlalchemy.errors import SchemaOutOfDateError
from sqlalchemy import Connection, Engine
from sqlalchemy.exc import DBAPIError

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine

__all__ = [
    "Access",
    "AccessOptions",
    "Call",
    "Doors",
    "Plan",
    "SyncRunner",
    "access_options",
    "has_connected",
    "not_retried",
]


class Access(enum.Enum):
    """How an operation reaches the database."""

    READ = "read"
    """A read transaction (several statements, one snapshot where the database gives
    one)."""
    READ_ONE = "read-one"
    """One statement, no transaction around it."""
    WRITE = "write"
    """A write transaction (``BEGIN IMMEDIATE`` on SQLite)."""
    WRITE_ONE = "write-one"
    """One statement, atomic on its own, no transaction around it."""

    # Members are singletons: hashed by identity in C, not by Enum's Python __hash__
    # (a key of the per-access option maps, looked up at every call).
    __hash__ = object.__hash__


R = TypeVar("R")

Call = tuple[Access, Any, tuple[Any, ...]]
"""One operation to run: ``(access, op, args)``, run as ``op(conn, *args)`` on a
connection opened for ``access``."""

Plan = Generator[Call | Step, Any, R]
"""The steps of a method (the saver's, the store's, a lock's): yields each operation to
run (a :data:`Call`) or other step (a :class:`~._engine.steps.Step`: a pause, an
embedding call), is sent its result, and returns the method's result. Run by
:meth:`SyncRunner.drive` (sync) or :meth:`~._engine.runner.Runner.adrive` (async), so that
a method and its async twin share every step."""

AccessOptions = Mapping[Access, Mapping[str, Any]]
"""Execution options of each :class:`Access` (schema map, dialect options)."""

_WRITES = (Access.WRITE, Access.WRITE_ONE)
#: The accesses a :class:`~._engine.lane.Lane` may serve (one statement, no transaction).
ONE = (Access.READ_ONE, Access.WRITE_ONE)

E = TypeVar("E", Engine, "AsyncEngine")


def has_connected(engine: Engine) -> bool:
    """Whether ``engine`` (or another engine sharing its dialect, such as a per-loop copy
    of an async engine) has made a connection: SQLAlchemy initialises the dialect at the
    first connection that succeeds, and sets ``default_isolation_level`` then."""
    return hasattr(engine.dialect, "default_isolation_level")


def not_retried(error: BaseException) -> None:
    """Raise again the interruption (``KeyboardInterrupt``, ``SystemExit``, a task's
    cancellation) that ``error`` came from, if any: a rollback that failed because Ctrl-C
    stopped the driver in the middle of a statement (PyMySQL's ``InterfaceError``)
    looks like a lost connection, and retrying it would swallow the Ctrl-C."""
    seen: set[int] = set()
    cause = error.__context__
    while cause is not None and id(cause) not in seen:
        if not isinstance(cause, Exception):
            raise cause
        seen.add(id(cause))
        cause = cause.__context__


class Doors(Generic[E]):
    """An engine (sync or async) and its four handles, one per :class:`Access`.

    Args:
        engine: The engine.
        options: Execution options of each access, as the dialect family's query
            builder adjusts them to the engine's driver (``engine_options``: asyncpg
            with its statement cache off takes no AUTOCOMMIT).
    """

    __slots__ = ("_open", "engine", "lane")

    def __init__(self, engine: E, options: AccessOptions) -> None:
        self.engine: E = engine
        self._open: dict[Access, Callable[[], Any]] = {}
        sync: Any = getattr(engine, "sync_engine", engine)
        family = DIALECTS.get(sync.dialect.name)
        if family is not None:
            options = {a: family.engine_options(sync, o) for a, o in options.items()}
        for access, opts in options.items():
            handle: Any = engine.execution_options(**opts)
            self._open[access] = handle.begin if access in _WRITES else handle.connect
        #: The short door of one-statement operations (:mod:`._engine.lane`).
        self.lane = Lane(
            sync,
            {a: options[a] for a in ONE if a in options},
        )

    def connect(self, access: Access) -> Any:
        """A connection context for ``access``: ``begin()`` for a write (a transaction,
        committed at the end), ``connect()`` for a read (sync ``with`` or ``async
        with`` as the engine is)."""
        return self._open[access]()


def access_options(qb: QueryBuilder, schema: str | None) -> dict[Access, dict[str, Any]]:
    """Execution options of each :class:`Access` for a dialect and a schema.

    Args:
        qb: The dialect's query builder (its one-statement options).
        schema: The schema of the tables (a ``schema_translate_map``), or None.

    Returns:
        The options of each access.
    """
    base: dict[str, Any] = {"schema_translate_map": {None: schema}} if schema else {}
    return {
        Access.READ: base,
        Access.READ_ONE: {**base, **qb.one_statement_read_options},
        Access.WRITE: {**base, WRITE_OPTION: True},
        Access.WRITE_ONE: {**base, **qb.one_statement_write_options},
    }


class SyncRunner:
    """Runs operations through a sync engine's door, checking the schema once and
    retrying through transient failures.

    Args:
        sync: The sync engine's doors.
        qb: The dialect's query builder (errors).
        schema: The PostgreSQL schema of the tables, for the schema check.
        retry_timeout: Seconds to retry an operation through transient failures
            (:class:`~._engine.retry.Retry`).
        on_retry: The owner's callback, given each retried failure, or None.
        log: The logger of the retries (the saver's, or the store's own).
    """

    def __init__(
        self,
        sync: Doors[Engine],
        qb: QueryBuilder,
        schema: str | None,
        *,
        retry_timeout: float = RETRY_TIMEOUT,
        on_retry: OnRetry | None = None,
        log: logging.Logger = LOG,
    ) -> None:
        self.sync = sync
        self.qb = qb
        self.schema = schema
        self.retry_timeout = retry_timeout
        self.on_retry = on_retry
        self.log = log
        self.schema_checked = False

    def run(self, access: Access, op: Callable[..., R], args: tuple[Any, ...]) -> R:
        """Run ``op(conn, *args)`` on a sync connection for ``access``, retried through
        transient failures (see :class:`~._engine.retry.Retry`)."""
        retry: Retry | None = None
        while True:
            try:
                if self.schema_checked and op in CAPABLE and access in ONE:
                    lane = self.sync.lane
                    if lane.open(access):
                        try:
                            return lane.run(access, access is Access.WRITE_ONE, op, args)  # type: ignore[no-any-return]
                        except Detour:
                            pass  # through the full door
                with self.sync.connect(access) as conn:
                    if not self.schema_checked:
                        self.check_schema(conn)
                    return op(conn, *args)
            except (DBAPIError, ConnectionError) as e:
                not_retried(e)
                retry = retry or self.retry()
                time.sleep(retry.pause(e))

    def call(self, fn: Callable[..., R], *args: Any) -> R:
        """``fn(*args)`` (work that opens its own connections, such as a migration),
        retried through transient failures like :meth:`run`."""
        retry: Retry | None = None
        while True:
            try:
                return fn(*args)
            except (DBAPIError, ConnectionError) as e:
                not_retried(e)
                retry = retry or self.retry()
                time.sleep(retry.pause(e))

    def retry(self) -> Retry:
        """A new :class:`~._engine.retry.Retry` for one call (its clock starts now)."""
        return Retry(
            self.qb,
            self.retry_timeout,
            self.sync.engine.url,
            reached=self.reached,
            on_retry=self.on_retry,
            log=self.log,
        )

    def reached(self) -> bool:
        """Whether the engine has connected to the database once (its dialect was
        initialised by a first connection): until then a failure to connect is a
        wrong URL or a server not started, raised at once (see :class:`~._engine.retry.Retry`)."""
        return has_connected(self.sync.engine)

    def drive(self, plan: Plan[R]) -> R:
        """Run a plan's steps one after the other through the sync door: its operations
        by :meth:`run`, its other steps by :meth:`.Step.do`."""
        steps = Steps(plan)
        for step in steps:
            if type(step) is tuple:  # an operation: the common case, checked first
                access, op, args = step
                steps.result = self.run(access, op, args)
            else:
                steps.result = cast(Step, step).do()  # a pause, a blocking call, an embedding
        return steps.value

    def check_schema(self, conn: Connection) -> None:
        """Once per runner: the database must be at the migration head this library
        ships, so that a missing ``setup()`` is a clear error rather than raw SQL
        failing."""
        current = migrate.current_revision(conn, schema=self.schema)
        head = migrate.head_revision()
        if current != head:
            where = shown_url(conn.engine.url)
            if current is None or current in migrate.known_revisions():
                raise SchemaOutOfDateError(
                    f"The tables of langgraph-checkpoint-sqlalchemy (checkpoints and store) at "
                    f"{where} are at revision {current or 'none'}, this version needs {head}. "
                    "Run setup() once on the saver or the store (or: python -m "
                    "langgraph.checkpoint.sqlalchemy upgrade --url URL)."
                )
            raise migrate.newer_schema_error(conn, current)
        self.schema_checked = True


class Steps(Generic[R]):
    """The steps of a plan, for a driver's loop: iterating yields each step (an operation
    or a :class:`.Step`), the driver sets :attr:`result` before the next; :attr:`value`
    is the plan's result."""

    __slots__ = ("_plan", "result", "value")

    def __init__(self, plan: Plan[R]) -> None:
        self._plan = plan
        self.result: Any = None
        self.value: R

    def __iter__(self) -> Iterator[Call | Step]:
        try:
            while True:
                yield self._plan.send(self.result)
        except StopIteration as done:
            self.value = done.value
