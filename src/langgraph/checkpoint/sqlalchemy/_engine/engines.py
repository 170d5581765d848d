"""Where the saver's database is and how its engines are made.

The one default database URL of the package (the saver's server factory, the CLI and
Alembic's ``env.py`` all read it from here; it is defined in :mod:`._engine.defaults`);
:func:`resolve_urls`, which maps a URL or a SQLite path to the sync and async engine URLs
(the drivers of each dialect come from its query builder class in :mod:`.dialects`) and
gives each engine the connection arguments its driver takes (:mod:`._engine.arguments`);
:func:`configure_engine`, the per-dialect connection set-up of a new engine;
:func:`engine_pair`, the saver's sync and async engines from whichever of them it was
given; :func:`source_url`, the read-only URL of a database to copy from (the transfer's
``--from``, a copy from an official store).
"""

from __future__ import annotations

import importlib
import os
import re
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from langgraph.checkpoint.sqlalchemy._codec.display import masked_text, shown_url
from langgraph.checkpoint.sqlalchemy._engine.arguments import check_connect, split_arguments
from langgraph.checkpoint.sqlalchemy._engine.conninfo import conninfo_url, is_conninfo
from langgraph.checkpoint.sqlalchemy._engine.defaults import DEFAULT_URL, URL_ENV, url_from_env
from langgraph.checkpoint.sqlalchemy.dialects import DIALECTS, QueryBuilder
from langgraph.checkpoint.sqlalchemy.dialects.sqlite import (
    MEMDB_PREFIX,
    SQLITE_URL_FORMS,
    check_file,
)
from langgraph.checkpoint.sqlalchemy.errors import (
    DatabaseURLError,
    DriverNotInstalledError,
    UnknownSourceError,
    UnsupportedDialectError,
    UnsupportedDriverError,
)
from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import URL, Dialect, make_url
from sqlalchemy.exc import ArgumentError

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine

__all__ = [
    "DEFAULT_URL",
    "SQLITE_URL_FORMS",
    "URL_ENV",
    "EngineURLs",
    "configure_engine",
    "engine_pair",
    "resolve_urls",
    "source_url",
    "url_from_env",
]


@dataclass(frozen=True)
class EngineURLs:
    """The pair of URLs a saver builds its engines from.

    Attributes:
        sync: URL of the sync engine (``sqlite+pysqlite``, ``postgresql+psycopg``, ...).
        async_: URL of the async engine (``sqlite+aiosqlite``, ``postgresql+psycopg``, ...).
        memory: For SQLite ``:memory:``, the URI of the shared in-memory database that both
            engines open (SQLite's ``memdb`` VFS); the saver keeps one connection to it open
            so that the database lives as long as the saver. ``None`` otherwise.
        async_missing: Why no async driver is installed for the URL, or None. Sync-only
            users (the command line, Alembic) go on; the saver raises it
            (:meth:`require_async`).
        sync_args: The ``connect_args`` of the sync engine: those given that its driver
            takes (:mod:`._engine.arguments`).
        async_args: The ``connect_args`` of the async engine, likewise.
    """

    sync: URL
    async_: URL
    memory: str | None = None
    async_missing: str | None = None
    sync_args: Mapping[str, Any] = field(default_factory=dict)
    async_args: Mapping[str, Any] = field(default_factory=dict)

    def require_async(self) -> None:
        """Raise :class:`DriverNotInstalledError` if no async driver is installed."""
        if self.async_missing is not None:
            raise DriverNotInstalledError(self.async_missing)


def _memory_urls() -> EngineURLs:
    # One named in-memory database per saver, shared by every connection of the process
    # that names it (memdb VFS, SQLite >= 3.36), with ordinary locking, unlike
    # ``cache=shared``. The name's randomness is the OS's, not ``uuid.uuid4()``, whose
    # stream an application's tests may make deterministic.
    name = f"{MEMDB_PREFIX}{secrets.token_hex(16)}?vfs=memdb"
    sync_url = make_url(f"sqlite+pysqlite:///{name}&uri=true")
    return EngineURLs(sync_url, sync_url.set(drivername="sqlite+aiosqlite"), name)


def resolve_urls(
    url_or_path: str | URL, connect_args: Mapping[str, Any] | None = None
) -> EngineURLs:
    """Map a database URL or a SQLite file path to a sync and an async engine URL, and
    give each engine the connection arguments its driver takes.

    SQLite: ``sqlite:///relative.db``, ``sqlite:////abs/path.db`` and a bare path give
    ``sqlite+pysqlite`` and ``sqlite+aiosqlite`` on that file; ``:memory:``, ``sqlite://``
    and ``sqlite:///:memory:`` (SQLAlchemy's own spellings of an in-memory database) give
    one in-memory database shared by both engines. PostgreSQL: ``postgresql://`` and
    ``postgres://`` give psycopg 3 for both sides, and so does a libpq connection string
    (``host=db dbname=app``, :mod:`._engine.conninfo`); MySQL/MariaDB: ``mysql://`` and
    ``mariadb://`` give PyMySQL and asyncmy. A URL naming a driver keeps it for the side(s)
    it serves; the other side takes the first installed driver of the dialect
    (the dialect's ``sync_drivers`` and ``async_drivers``).

    Each query parameter of the URL and each key of ``connect_args`` goes to the engine,
    or both, whose driver takes it (:func:`._engine.arguments.split_arguments`): for
    ``postgresql+asyncpg://...?prepared_statement_cache_size=0``, the psycopg engine's
    URL has no ``prepared_statement_cache_size``.

    Args:
        url_or_path: A SQLAlchemy URL (string or ``URL``) or a SQLite file path.
        connect_args: The ``connect_args`` given for both engines, or None.

    Returns:
        The URLs and ``connect_args`` of both engines.

    Raises:
        DatabaseURLError: A URL SQLAlchemy would refuse or read otherwise than it looks:
            ``sqlite://relative.db`` (a host on SQLite), ``sqlite:///`` or ``""`` (no
            path), ``sqlite:relative.db`` (no ``//``), an unparsable URL, ``host:port``
            without a scheme, a bad libpq connection string, an unencoded ``@`` in the
            user name or password. The message lists the valid forms. A
            connection argument neither engine's driver takes, or TLS settings that reach
            one engine only (the other would connect without them).
        UnsupportedDialectError: The URL's dialect is none of sqlite, postgresql, mysql,
            mariadb.
        UnsupportedDriverError: A driver the saver does not know or refuses (aiomysql).
        DriverNotInstalledError: The driver named, or any sync driver, is not installed;
            the message names the extra to install. A missing async driver is reported in
            :attr:`EngineURLs.async_missing` instead (the command line needs none).
        TypeError: ``connect_args`` is not a mapping of names.
    """
    urls = _resolve(url_or_path)
    sync, async_, sync_args, async_args = split_arguments(urls.sync, urls.async_, connect_args)
    if sync is urls.sync and async_ is urls.async_ and not sync_args and not async_args:
        return urls  # nothing to split
    return replace(urls, sync=sync, async_=async_, sync_args=sync_args, async_args=async_args)


def _resolve(url_or_path: str | URL) -> EngineURLs:
    """:func:`resolve_urls` before the connection arguments are split."""
    if not isinstance(url_or_path, (str, URL)):
        raise DatabaseURLError(
            f"a database URL must be a str or a sqlalchemy URL, got "
            f"{type(url_or_path).__name__}; {SQLITE_URL_FORMS}"
        )
    if isinstance(url_or_path, str):
        text = url_or_path.strip()
        if text == ":memory:":
            return _memory_urls()
        if not text:
            raise DatabaseURLError(f"empty database URL; {SQLITE_URL_FORMS}")
        if is_conninfo(text):  # a URL never starts with "keyword=" (a value may hold ://)
            url = conninfo_url(text)  # libpq's "host=db dbname=app": PostgreSQL
        elif "://" not in text:
            path = check_file(os.path.abspath(os.path.expanduser(_bare_path(text))))
            url = URL.create("sqlite+pysqlite", database=path)
            return EngineURLs(url, url.set(drivername="sqlite+aiosqlite"))
        else:
            try:
                url = make_url(_unalias(text))
            except ArgumentError as e:
                raise DatabaseURLError(
                    f"cannot parse the database URL: {e}; {SQLITE_URL_FORMS}"
                ) from None
            except ValueError:
                # SQLAlchemy read a port that is not a number; its words would show the
                # text after the first '@', a part of an unencoded password.
                scheme = text.split("://", 1)[0]
                raise DatabaseURLError(
                    f"cannot parse the database URL {scheme}://***: its port is not a "
                    "number. If the user name or password holds '@', ':' or '/', URL-encode "
                    "it (urllib.parse.quote(password, safe=''), '@' as %40), or build the URL "
                    "with sqlalchemy.URL.create(), which takes the password as it is."
                ) from None
    else:
        url = url_or_path
    _check_userinfo(url)
    backend, _, driver = url.drivername.partition("+")
    dialect = DIALECTS.get(backend)
    if dialect is None:
        raise UnsupportedDialectError(
            f"Unsupported database URL scheme {url.drivername!r}: use sqlite://, "
            "postgresql:// or mysql:// (mariadb://)."
        )
    if dialect.check_url(url):
        return _memory_urls()
    sync_driver, async_driver, async_missing = _pick_drivers(dialect, driver, url.drivername)
    defaults = {k: v for k, v in dialect.url_query.items() if k not in url.query}
    if defaults:
        url = url.update_query_dict(defaults)
    url = _password_in_place(url)
    return EngineURLs(
        url.set(drivername=f"{backend}+{sync_driver}"),
        url.set(drivername=f"{backend}+{async_driver}"),
        async_missing=async_missing,
    )


def source_url(url: str) -> URL:
    """The sync URL to read a source database at ``url`` with (a copy's ``--from``): a
    SQLite file is opened read-only, so that opening a file that is not a store creates
    and changes nothing.

    Raises:
        UnknownSourceError: A SQLite URL that is not an existing file (in memory, a
            ``file:`` URI, a missing path).
        DatabaseURLError: A URL SQLAlchemy would refuse.
    """
    sync_url = resolve_urls(url).sync
    if sync_url.get_backend_name() != "sqlite":
        return sync_url
    path = sync_url.database or ""
    if not path or path == ":memory:" or path.startswith("file:"):
        raise UnknownSourceError(f"{shown_url(url)!r}: give the path of an existing SQLite file.")
    if not os.path.isfile(path):
        raise UnknownSourceError(f"no such SQLite file: {path}")
    return make_url(f"sqlite:///file:{quote(path)}?mode=ro&uri=true")


def _password_in_place(url: URL) -> URL:
    """``?password=`` (psycopg and PyMySQL take it) moved to the URL's password field when
    that is empty: the same connection argument, but SQLAlchemy masks that field as
    ``***`` in ``repr(engine)``, logs and errors, and never a query parameter. A URL with
    both is left as it is (the drivers disagree on which one wins), and so is a URL
    without a host (a SQLite file: SQLAlchemy refuses a password there, and the query
    parameter is ignored with a warning, as before)."""
    password = url.query.get("password")
    if password is None or url.password is not None or not url.host:
        return url
    value = password if isinstance(password, str) else password[-1]
    return url.difference_update_query(["password"]).set(password=value)


def _bare_path(text: str) -> str:
    """``text`` as a SQLite file path, unless it reads as something else a newcomer
    meant: a URL without ``//`` after its scheme, ``host:port/db`` without a scheme, or
    a connection string of some kind (``=`` and spaces).

    Raises:
        DatabaseURLError: It reads as one of those; nothing is created.
    """
    if _scheme_without_slashes(text):
        raise DatabaseURLError(
            f"{shown_url(text)!r} looks like a URL without '//' after its scheme; "
            f"{SQLITE_URL_FORMS} (PostgreSQL: postgresql://user@host/db)"
        )
    if re.match(r"^[\w.-]+:\d+(/|$)", text):
        raise DatabaseURLError(
            f"{shown_url(text)!r} looks like host:port without a scheme, not a SQLite "
            "file: write postgresql://user@host:port/db or mysql://user@host:port/db; "
            f"{SQLITE_URL_FORMS}"
        )
    if "=" in text and any(c.isspace() for c in text):
        raise DatabaseURLError(
            f"{shown_url(text)!r} looks like a connection string, not a SQLite file: "
            "write a URL (postgresql://user@host:port/db), or a libpq connection string "
            "starting with a keyword (host=db port=5432 dbname=app user=u); for a SQLite "
            f"file whose name holds '=' and spaces, write sqlite:///path; {SQLITE_URL_FORMS}"
        )
    return text


def _check_userinfo(url: URL) -> None:
    """Refuse a URL whose host holds an ``@``: the user name or password held an
    unencoded ``@`` (``postgresql://u:p@ss@host/db``), and SQLAlchemy took the text
    after the first ``@`` as the host. The error shows none of the user name and password.

    Raises:
        DatabaseURLError: The host holds an ``@``.
    """
    if not url.host or "@" not in url.host:
        return
    host = url.host.rsplit("@", 1)[1]
    shown = shown_url(URL.create(url.drivername, host=host, port=url.port, database=url.database))
    shown = shown.replace("://", "://***@", 1)
    raise DatabaseURLError(
        f"the database URL {shown} holds several '@' before its host: the password (or "
        "user name) holds an '@' that is not URL-encoded, so the text after the first "
        "'@' would be taken as the host. Write '@' as %40 in the password (encode it "
        "with urllib.parse.quote(password, safe='')), or build the URL with "
        "sqlalchemy.URL.create(), which takes the password as it is."
    )


def _scheme_without_slashes(text: str) -> bool:
    """Whether ``text`` is ``scheme:rest`` with no ``//`` for a known scheme: a mistyped
    URL, not a file name (a Windows drive letter has a one-letter scheme)."""
    schemes = [*DIALECTS, *(a for d in DIALECTS.values() for a in d.url_aliases)]
    pattern = "|".join(re.escape(s) for s in sorted(schemes, key=len, reverse=True))
    return re.match(rf"^({pattern})(\+\w+)?:", text) is not None


def _unalias(text: str) -> str:
    """``text`` with a scheme alias (``postgres://``, ``postgres+asyncpg://``) spelled as
    its dialect's name."""
    for name, dialect in DIALECTS.items():
        for alias in dialect.url_aliases:
            if text.startswith((f"{alias}://", f"{alias}+")):
                return name + text[len(alias) :]
    return text


def _pick_drivers(
    dialect: type[QueryBuilder], driver: str, drivername: str
) -> tuple[str, str, str | None]:
    """``(sync driver, async driver, why the async one is missing or None)`` for a URL of
    ``dialect`` naming ``driver`` (or none): the named driver serves the side(s) it can,
    the first installed candidate the other side."""
    family = dialect.family
    if driver in dialect.refused_drivers:
        raise UnsupportedDriverError(
            f"{drivername}:// is not supported: {dialect.refused_drivers[driver]}"
        )
    sync_ok, async_ok = dialect.sync_drivers, dialect.async_drivers
    if driver and driver not in sync_ok and driver not in async_ok:
        raise UnsupportedDriverError(
            f"{drivername}:// names a driver this saver does not support; use one of "
            + ", ".join(f"{family}+{d}" for d in dict.fromkeys(sync_ok + async_ok))
        )
    if driver:
        module, fix = dialect.driver_modules[driver]
        if not _importable(module):
            raise DriverNotInstalledError(
                f"{drivername}:// needs the {module!r} module, which is not installed: {fix}"
            )
    sync_driver = driver if driver in sync_ok else _first_installed(dialect, sync_ok)
    async_driver = driver if driver in async_ok else _first_installed(dialect, async_ok)

    def missing(side: str, names: Sequence[str]) -> str:
        named = (
            f"{drivername}:// serves only one side; the {side} methods need"
            if driver
            else f"{drivername}:// needs"
        )
        return (
            f"{named} a {side} {family} driver ({', '.join(names)}) and none is "
            f"installed: {dialect.extra}"
        )

    if sync_driver is None:
        raise DriverNotInstalledError(missing("sync", sync_ok))
    if async_driver is None:
        return sync_driver, async_ok[0], missing("async", async_ok)
    return sync_driver, async_driver, None


def _first_installed(dialect: type[QueryBuilder], drivers: Sequence[str]) -> str | None:
    return next((d for d in drivers if _importable(dialect.driver_modules[d][0])), None)


def _importable(module: str) -> bool:
    try:
        importlib.import_module(module)
    except (ImportError, OSError):
        return False
    return True


def configure_engine(engine: Engine) -> None:
    """Install the per-dialect connection set-up on a sync engine (idempotent).

    The dialect's query builder class does it (``QueryBuilder.configure``). On SQLite:
    ``busy_timeout`` of 30 s, WAL journal (file databases), ``synchronous = NORMAL``, and
    explicit ``BEGIN`` (``BEGIN IMMEDIATE`` for writes) so that every transaction, DDL
    included, is a real SQLite transaction. On MySQL/MariaDB: a recursive-CTE limit
    (``dialects.mysql.MYSQL_RECURSION_LIMIT``) that lets long parent chains be walked.
    PostgreSQL needs nothing. For an ``AsyncEngine`` pass its ``sync_engine``.

    On every dialect, a connection argument (URL query parameter or ``connect_args``
    key) the driver does not take (PyMySQL and asyncmy take the query string as keyword
    arguments: ``?bogus=1`` was ``Connection.__init__() got an unexpected keyword
    argument 'bogus'``) is a :class:`.DatabaseURLError` that names it and the engine's
    driver, raised before connecting (:func:`._engine.arguments.check_connect`).

    Args:
        engine: The engine to configure.
    """
    if not event.contains(engine, "do_connect", _check_arguments):
        event.listen(engine, "do_connect", _check_arguments)
    dialect = DIALECTS.get(engine.dialect.name)
    if dialect is not None:
        dialect.configure(engine)


def url_engine(url: str | URL, *, is_async: bool = False, **kwargs: Any) -> Any:
    """``create_engine`` (or ``create_async_engine``) of a user's URL, whose values the
    dialect converts when the engine is made (``?connect_timeout=abc`` was a raw
    ``ValueError`` from SQLAlchemy's MySQL dialect).

    Raises:
        DatabaseURLError: A value of the URL the dialect cannot convert.
    """
    try:
        if is_async:
            from sqlalchemy.ext.asyncio import create_async_engine

            return create_async_engine(url, **kwargs)
        return create_engine(url, **kwargs)
    except DatabaseURLError:
        raise
    except ValueError as e:
        raise DatabaseURLError(
            f"a value in the database URL cannot be used: {masked_text(str(e), url)}; "
            "fix it in the URL's query string (numbers for timeouts and ports)."
        ) from e


def _check_arguments(
    dialect: Dialect, _record: object, _cargs: tuple[Any, ...], cparams: dict[str, Any]
) -> None:
    """The ``do_connect`` hook of :func:`configure_engine`: refuses arguments the driver
    does not take (:func:`._engine.arguments.check_connect`). It returns nothing, so
    SQLAlchemy (or a listener of the application's) connects as it would without it."""
    check_connect(dialect, cparams)


def engine_pair(
    engine: Engine | None, async_engine: AsyncEngine | None
) -> tuple[Engine, AsyncEngine, list[Engine | AsyncEngine]]:
    """The saver's two engines: the given ones, the missing one made from the other's URL.

    Returns:
        ``(engine, async_engine, made)``: both configured for the saver
        (:func:`configure_engine`), and the ones made here.

    Raises:
        ValueError: Neither engine was given.
        UnsupportedDriverError: ``engine`` is an async driver's engine.
        DriverNotInstalledError: The missing engine needs a driver that is not installed.
    """
    # Here, not at the top: the command line resolves URLs without the asyncio extension.
    from sqlalchemy.ext.asyncio import create_async_engine

    if engine is None and async_engine is None:
        raise ValueError("SQLAlchemySaver needs an engine or an async_engine (or both).")
    made: list[Engine | AsyncEngine] = []
    if engine is not None and engine.dialect.is_async:
        raise UnsupportedDriverError(
            f"engine= takes a sync engine; {engine.url.drivername} is an async driver: "
            "pass create_async_engine(url) as async_engine= instead."
        )
    if engine is None:
        assert async_engine is not None
        engine = create_engine(resolve_urls(async_engine.url).sync)
        made.append(engine)
    if async_engine is None:
        twin = resolve_urls(engine.url)
        twin.require_async()
        async_engine = create_async_engine(twin.async_)
        made.append(async_engine)
    configure_engine(engine)
    configure_engine(async_engine.sync_engine)
    return engine, async_engine, made
