"""SQLAlchemy's private names this package relies on, each behind one function.

SQLAlchemy's public API has no way to do what these do (each function says why); they are
all here, so that a SQLAlchemy release that renames one breaks one module, and loudly:

- a name SQLAlchemy defines on a class or a module is checked when this module is
  imported: a missing one raises :class:`ImportError` naming the SQLAlchemy version and
  the name;
- an attribute SQLAlchemy's constructor sets on an instance (a pool's settings, the parent
  of an ``Engine.execution_options()`` copy) is checked where it is read (once per engine or
  per pool, never per call): a missing one raises :class:`RuntimeError`, worded the same.

There is never a fallback that would run on silently with another behaviour.
``tests/engine/test_sqlalchemy_private.py`` checks that each name exists and still does
what we rely on (``.ci/newest`` runs it against the newest SQLAlchemy the package index
serves, pre-releases included); ``tests/meta/test_sqlalchemy_private_names.py`` checks
that no other module of the package touches a SQLAlchemy private name. The "since"
versions below come from SQLAlchemy's history; every name was read in the source of
2.0.38 (our lowest) and 2.1.9.

The module sits in the dialects layer, the lowest layer that needs one of these names
(MySQL's compile key, pgvector's column copy), so that the engine layer above (the short
door of :mod:`.._engine.lane`, the cursor executor of :mod:`.._engine.cursor`, the per-loop
engines of :mod:`.._engine.runner`) uses the same functions.
"""

from __future__ import annotations

from typing import Any, NoReturn

import sqlalchemy
import sqlalchemy.event.attr
from sqlalchemy import Column, Connection, Engine
from sqlalchemy.dialects.mysql.base import MySQLDialect
from sqlalchemy.engine.base import OptionEngine
from sqlalchemy.pool import Pool, QueuePool

__all__ = [
    "backslash_escapes",
    "base_engine",
    "copy_column",
    "handle_connect_error",
    "handle_dbapi_error",
    "has_listeners",
    "listeners_are",
    "pool_max_overflow",
    "pool_pre_pings",
    "pool_recycle",
]


def _missing(name: str) -> str:
    return (
        f"SQLAlchemy {sqlalchemy.__version__} has no {name}, which "
        "langgraph-checkpoint-sqlalchemy relies on (see its module "
        f"{__name__}): install a SQLAlchemy version inside the range the package "
        "declares, or report the break"
    )


def _required(owner: Any, name: str) -> Any:
    """``owner.<name>`` (a class or a module), or :class:`ImportError` at import."""
    try:
        return getattr(owner, name)
    except AttributeError:
        where = (
            f"{owner.__module__}.{owner.__qualname__}"
            if isinstance(owner, type)
            else owner.__name__
        )
        raise ImportError(_missing(f"{where}.{name}")) from None


def _read(obj: Any, name: str) -> Any:
    """``obj.<name>`` (set on the instance by SQLAlchemy's constructor), or
    :class:`RuntimeError`."""
    try:
        return getattr(obj, name)
    except AttributeError:
        raise RuntimeError(_missing(f"{type(obj).__name__}.{name}")) from None


_required(Connection, "_handle_dbapi_exception")
_required(Connection, "_handle_dbapi_exception_noconnection")
_required(MySQLDialect, "_backslash_escapes")
_required(Column, "_copy")
#: SQLAlchemy's listener collections of one event on a dispatch: without listeners of
#: the target's own (its class's only) and with them (``sqlalchemy.event.attr``).
_EMPTY: Any = _required(sqlalchemy.event.attr, "_EmptyListener")
_COLLECTION: Any = _required(sqlalchemy.event.attr, "_ListenerCollection")


# -- errors of a statement run on the driver's cursor ----------------------------------------


def handle_dbapi_error(
    connection: Connection,
    error: BaseException,
    statement: str | None,
    parameters: Any,
    cursor: Any,
) -> NoReturn:
    """Raise ``error``, a driver's error on ``connection``, as SQLAlchemy raises it from
    ``Connection.execute``: wrapped in :class:`sqlalchemy.exc.DBAPIError` (the statement
    and, unless ``hide_parameters``, the parameters in its message), after the
    ``handle_error`` listeners ran (their exception raised instead); on a disconnect the
    connection is invalidated, and the pool's connections older than it too.

    Uses ``Connection._handle_dbapi_exception`` (since SQLAlchemy 0.4.2, these five
    arguments since 1.0). No public API takes an error raised by a statement SQLAlchemy did not run:
    ``Connection.execute`` and ``exec_driver_sql`` would run the statement again, through
    the execution context the cursor executor exists to skip.

    Raises:
        sqlalchemy.exc.DBAPIError: Always (or what a ``handle_error`` listener raised).
    """
    connection._handle_dbapi_exception(error, statement, parameters, cursor, None)


def handle_connect_error(error: BaseException, engine: Engine) -> NoReturn:
    """Raise ``error``, a driver's error while the pool connected for ``engine``, as
    ``Engine.connect()`` raises it: wrapped in :class:`sqlalchemy.exc.DBAPIError` after
    the ``handle_error`` listeners ran.

    Uses ``Connection._handle_dbapi_exception_noconnection`` (since SQLAlchemy 1.0).
    ``Engine.raw_connection()`` raises the driver's own error; ``Engine.connect()`` wraps
    it but makes a ``Connection`` for every call, the cost the short door exists to skip.

    Raises:
        sqlalchemy.exc.DBAPIError: Always (or what a ``handle_error`` listener raised).
    """
    Connection._handle_dbapi_exception_noconnection(error, engine.dialect, engine)


# -- a pool's settings --------------------------------------------------------------------


def pool_max_overflow(pool: QueuePool) -> int:
    """``create_engine``'s ``max_overflow`` of ``pool`` (-1: no limit, also with
    ``pool_size=0``).

    Uses ``QueuePool._max_overflow`` (since SQLAlchemy 0.1). The public ``size()`` and
    ``overflow()`` give the pool's size and its current overflow, not the maximum.

    Raises:
        RuntimeError: The installed SQLAlchemy has no such attribute.
    """
    return int(_read(pool, "_max_overflow"))


def pool_pre_pings(pool: Pool) -> bool:
    """Whether ``pool`` tests each connection it checks out (``pool_pre_ping=True``).

    Uses ``Pool._pre_ping`` (since SQLAlchemy 1.2); no public accessor.

    Raises:
        RuntimeError: The installed SQLAlchemy has no such attribute.
    """
    return bool(_read(pool, "_pre_ping"))


def pool_recycle(pool: Pool) -> int:
    """``pool_recycle`` of ``pool``: seconds after which a connection is replaced at
    checkout, -1 for never.

    Uses ``Pool._recycle`` (since SQLAlchemy 0.2.8); no public accessor.

    Raises:
        RuntimeError: The installed SQLAlchemy has no such attribute.
    """
    return int(_read(pool, "_recycle"))


# -- listeners ----------------------------------------------------------------------------


def has_listeners(dispatch: Any, names: tuple[str, ...]) -> bool:
    """Whether any event of ``names`` has a listener on ``dispatch`` (an engine's or a
    pool's ``dispatch``: listeners of the target or of its class), a listener added at
    any time included; the same answer as ``bool(dispatch.<name>)`` for each.

    Reads the listener containers of SQLAlchemy's ``_EmptyListener`` (since SQLAlchemy
    0.8) and ``_ListenerCollection`` (since 0.7) directly, where ``bool()`` would run their
    Python ``__bool__``: 10,100 instructions against 13,100 for the 8 engine events the
    short door checks at each call (callgrind, SQLAlchemy 2.1.9, CPython 3.11), so some
    4,500 a call for the 12 events it checks. Another kind of collection (an
    ``execution_options()`` copy's) answers ``bool()``. No public API tells whether an
    event has listeners (``event.contains`` asks about one given function).
    """
    for name in names:
        found = getattr(dispatch, name)
        kind = type(found)
        if kind is _EMPTY:
            if found.parent_listeners:
                return True
        elif kind is _COLLECTION:
            if found.listeners or found.parent_listeners:
                return True
        elif found:
            return True
    return False


def listeners_are(dispatch: Any, name: str, allowed: tuple[Any, ...]) -> bool:
    """Whether event ``name`` on ``dispatch`` has no listener, or exactly ``allowed`` (in
    order; ``tuple(dispatch.<name>)`` taken earlier: a dialect's own listeners).

    Reads the listener containers as :func:`has_listeners` does (the same private
    classes); another kind of collection is iterated.
    """
    found = getattr(dispatch, name)
    kind = type(found)
    if kind is _EMPTY and not found.parent_listeners:
        return True
    if kind is _COLLECTION and not found.parent_listeners:
        return not found.listeners or tuple(found.listeners) == allowed
    return not found or tuple(found) == allowed


# -- engines and tables -------------------------------------------------------------------


def base_engine(engine: Engine) -> Engine:
    """The engine an ``Engine.execution_options()`` copy stands for (whose pool, dialect
    and listeners it uses), through copies of copies, or ``engine`` itself when it is no
    such copy.

    Uses ``OptionEngine._proxied`` (since SQLAlchemy 0.8): a copy's parent, itself a copy
    when ``execution_options()`` was called on one. No public API leads from a copy to its
    engine, and a copy's ``pool`` is its engine's (setting it sets the engine's): an
    engine copied with a pool of its own must start from the engine.

    Raises:
        RuntimeError: The installed SQLAlchemy has no such attribute.
    """
    while isinstance(engine, OptionEngine):
        engine = _read(engine, "_proxied")
    return engine


def copy_column(column: Column[Any]) -> Column[Any]:
    """A copy of ``column`` (name, type, key, nullability, primary key, defaults),
    attached to no table.

    Uses ``Column._copy()`` (since SQLAlchemy 1.4): the public ``Column.copy()`` is
    deprecated since 1.4 and warns; the public ``Table.to_metadata()`` copies a whole
    table, its indexes and constraints included.
    """
    return column._copy()


def backslash_escapes(dialect: Any) -> bool:
    """Whether a MySQL/MariaDB dialect doubles backslashes in the literals it renders
    (the ``ESCAPE`` of a ``LIKE``): true unless the server's ``sql_mode``, read at the
    first connection, holds ``NO_BACKSLASH_ESCAPES``.

    Uses ``MySQLDialect._backslash_escapes`` (since SQLAlchemy 0.6.2), a class attribute
    the first connection sets on the dialect; no public accessor.
    """
    return bool(dialect._backslash_escapes)
