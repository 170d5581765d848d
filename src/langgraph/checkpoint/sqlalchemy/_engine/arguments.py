"""Which of a saver's two engines gets which connection argument.

One URL gives two engines, which may use two drivers: ``postgresql+asyncpg://`` is
asyncpg for the async engine and psycopg for the sync one. A connection argument (a
query parameter of the URL, a key of ``connect_args``) goes to the engine, or both,
whose driver takes it (:func:`split_arguments`): asyncpg's
``prepared_statement_cache_size`` to the async engine only, psycopg's
``prepare_threshold`` to the sync one only, ``connect_timeout`` to both psycopg
engines. What a query parameter becomes is SQLAlchemy's dialect's to say
(``Dialect.create_connect_args``: MySQL's ``ssl_ca`` becomes ``ssl``); whether a driver
takes an argument, its ``connect`` signature's and its dialect family's
(:class:`..dialects.QueryBuilder`'s ``adapter_arguments`` and ``passes_on``) to say. An
argument no driver of the pair takes, and TLS settings that reach one engine only, are
refused before any engine is made; :func:`check_connect` checks again at each connection
of any engine the saver uses, its own or one given.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from langgraph.checkpoint.sqlalchemy._codec.display import masked_text
from langgraph.checkpoint.sqlalchemy.dialects import DIALECTS, QueryBuilder
from langgraph.checkpoint.sqlalchemy.errors import DatabaseURLError
from sqlalchemy.engine import URL, Dialect

__all__ = ["Driver", "Parameters", "check_connect", "parameters", "split_arguments", "takes"]

#: The argument SQLAlchemy gives every async adapter for ``create_async_engine(...,
#: async_creator=...)``.
_ASYNC_CREATOR = "async_creator_fn"


@dataclass(frozen=True)
class Parameters:
    """The keyword parameters of a driver's ``connect``.

    Attributes:
        named: Each named keyword parameter and the type of its default (``int`` for a
            number the driver takes as given).
        others: Whether it takes other keywords (``**kwargs``), or has no signature
            Python can read: its family's ``passes_on`` says which.
    """

    named: Mapping[str, type]
    others: bool


#: :func:`parameters` by (family, driver), for the drivers that could be imported.
_PARAMETERS: dict[tuple[type[QueryBuilder], str], Parameters] = {}


def parameters(family: type[QueryBuilder], driver: str) -> Parameters | None:
    """The parameters of ``driver``'s ``connect`` (its module's, as ``driver_modules``
    names it), or None when the module cannot be imported. A module that cannot be
    imported is tried again at the next call (installed since, or no longer hidden):
    only what was read is kept."""
    key = (family, driver)
    found = _PARAMETERS.get(key)
    if found is None:
        found = _read_parameters(family.driver_modules[driver][0])
        if found is not None:
            _PARAMETERS[key] = found
    return found


def _read_parameters(module_name: str) -> Parameters | None:
    try:
        connect = importlib.import_module(module_name).connect
    except (ImportError, OSError, AttributeError):
        return None
    try:
        found = list(inspect.signature(connect).parameters.values())
    except (TypeError, ValueError):  # sqlite3.connect before Python 3.13
        return Parameters({}, True)
    kinds = (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return Parameters(
        {p.name: type(p.default) for p in found if p.kind in kinds},
        any(p.kind is p.VAR_KEYWORD for p in found),
    )


def takes(family: type[QueryBuilder], driver: str, name: str) -> bool:
    """Whether ``driver`` of ``family`` takes the connection argument ``name``: a named
    parameter of its ``connect``, an argument of SQLAlchemy's adapter, or a keyword its
    ``connect`` passes on that the family knows to be taken (or does not know: then the
    driver is given it, and its own error tells)."""
    if name == _ASYNC_CREATOR or name in family.adapter_arguments.get(driver, ()):
        return True
    found = parameters(family, driver)
    if found is None or name in found.named:
        return True
    return found.others and family.passes_on(driver, name) is not False


Driver = tuple[type[QueryBuilder], str]
"""A driver: its dialect family's query builder class and its name in URLs."""


def _driver(url: URL) -> Driver | None:
    family = DIALECTS.get(url.get_backend_name())
    driver = url.get_driver_name()
    if family is None or driver not in family.driver_modules:
        return None
    return family, driver


def _contributions(url: URL) -> Mapping[str, frozenset[str]]:
    """For each query parameter of ``url``, the driver arguments it becomes: itself where
    SQLAlchemy's dialect passes it on as it is (most do); else the arguments the dialect
    made of the query string that no parameter names (MySQL's ``ssl_ca`` and its
    siblings become ``ssl``; SQLite's ``vfs`` becomes part of the file URI: none). {} when
    the dialect cannot read the URL (its own error is raised when the engine is made)."""
    # Not keyed by the URL itself, whose hash renders it (and holds its password).
    key = (url.drivername, url.host, url.port, url.database, tuple(url.query.items()))
    found = _CONTRIBUTIONS.get(key)
    if found is None:
        try:
            dialect = url.get_dialect()()
            full = set(dialect.create_connect_args(url)[1])
            bare = set(dialect.create_connect_args(url.set(query={}))[1])
        except Exception:  # SQLAlchemy raises its own error when the engine is made
            return {}
        derived = frozenset(full - bare - set(url.query))
        found = {name: frozenset({name}) if name in full else derived for name in url.query}
        if len(_CONTRIBUTIONS) >= 256:  # from_conn_string resolves the same URLs again
            _CONTRIBUTIONS.clear()
        _CONTRIBUTIONS[key] = found
    return found


_CONTRIBUTIONS: dict[tuple[Any, ...], Mapping[str, frozenset[str]]] = {}


def _taken(
    driver: Driver | None, names: Iterable[str], made: Mapping[str, frozenset[str]]
) -> set[str]:
    """The names (query parameters with what they become in ``made``, or
    ``connect_args`` keys) that ``driver`` takes (all of them for an unknown driver)."""
    if driver is None:
        return set(names)
    family, name = driver
    return {n for n in names if all(takes(family, name, a) for a in made.get(n, (n,)))}


def _is_tls(name: str) -> bool:
    lowered = name.lower()
    return "ssl" in lowered or "tls" in lowered


def split_arguments(
    sync: URL, async_: URL, connect_args: Mapping[str, Any] | None
) -> tuple[URL, URL, dict[str, Any], dict[str, Any]]:
    """The URLs and ``connect_args`` of the two engines, each with only what its driver
    takes (see the module).

    A plain argument (a number or a string) of SQLAlchemy's adapter
    (``adapter_arguments``: asyncpg's ``prepared_statement_cache_size``) given in
    ``connect_args`` is moved into that engine's URL, where SQLAlchemy reads it as well
    and the family's ``engine_options`` reads it.

    Args:
        sync: The sync engine's URL, with the URL's whole query string.
        async_: The async engine's URL, likewise.
        connect_args: The ``connect_args`` given for both engines, or None.

    Returns:
        ``(sync URL, async URL, sync connect_args, async connect_args)``.

    Raises:
        DatabaseURLError: An argument that neither engine's driver takes, or TLS
            settings (an argument whose name holds ``ssl`` or ``tls``) that reach one
            engine while the other gets none (it would connect without them). The
            message names the arguments and the drivers, never a value.
        TypeError: ``connect_args`` is not a mapping of names.
    """
    if connect_args is not None and (
        not isinstance(connect_args, Mapping) or not all(isinstance(k, str) for k in connect_args)
    ):
        raise TypeError(
            "connect_args must be a dict of connection argument names (str) to values, "
            f"got {type(connect_args).__name__}"
        )
    given = dict(connect_args or {})
    if not (sync.query or async_.query or given):
        return sync, async_, {}, {}
    pair = (sync, async_)
    drivers = [_driver(u) for u in pair]
    query = [_taken(drivers[0], sync.query, _contributions(sync))]
    args = [_taken(drivers[0], given, {})]
    if drivers[1] == drivers[0] and async_.query == sync.query:  # psycopg for both
        query.append(query[0])
        args.append(args[0])
    else:
        query.append(_taken(drivers[1], async_.query, _contributions(async_)))
        args.append(_taken(drivers[1], given, {}))
    _check_each_taken("the URL's query string", sync.query, query, sync, async_)
    _check_each_taken("connect_args", given, args, sync, async_)
    sides = [query[i] | args[i] for i in (0, 1)]
    tls = [{n for n in side if _is_tls(n)} for side in sides]
    if bool(tls[0]) != bool(tls[1]):
        _refuse_one_sided_tls(tls, sync, async_)
    urls = list(pair)
    split = [given, dict(given)]
    for i, url in enumerate(pair):
        others = [n for n in url.query if n not in query[i]]
        if others:
            urls[i] = url.difference_update_query(others)
        if len(args[i]) < len(given):
            split[i] = {k: v for k, v in given.items() if k in args[i]}
        if given:
            urls[i], split[i] = _adapter_arguments_in_url(drivers[i], urls[i], split[i])
    return urls[0], urls[1], split[0], split[1]


def _check_each_taken(
    source: str, names: Iterable[str], taken: list[set[str]], sync: URL, async_: URL
) -> None:
    refused = sorted(n for n in names if n not in taken[0] and n not in taken[1])
    if refused:
        raise DatabaseURLError(
            f"neither engine's driver takes the connection argument(s) "
            f"{', '.join(map(repr, refused))} of {source}: not the sync engine's "
            f"{sync.drivername} nor the async engine's {async_.drivername}. Check the "
            f"spelling, or remove it from {source}."
        )


def _refuse_one_sided_tls(tls: list[set[str]], sync: URL, async_: URL) -> None:
    given, missing = (0, 1) if tls[0] else (1, 0)
    names = ("sync", "async")
    drivers = (sync.drivername, async_.drivername)
    raise DatabaseURLError(
        f"the TLS setting(s) {', '.join(map(repr, sorted(tls[given])))} reach only the "
        f"{names[given]} engine ({drivers[given]}): the {names[missing]} engine's driver "
        f"{drivers[missing]} takes none of them, and would connect without them. Give it "
        f"its own in the URL or connect_args too (each engine gets the ones its driver "
        f"takes: sslmode for psycopg, ssl for asyncpg, ...), or give the saver both "
        f"engines, each made with its own."
    )


def _adapter_arguments_in_url(
    driver: Driver | None, url: URL, args: dict[str, Any]
) -> tuple[URL, dict[str, Any]]:
    own = driver[0].adapter_arguments.get(driver[1], frozenset()) if driver else frozenset()
    moved = {
        k: str(v)
        for k, v in args.items()
        if k in own and isinstance(v, (int, str)) and not isinstance(v, bool)
    }
    if not moved:
        return url, args
    return url.update_query_dict(moved), {k: v for k, v in args.items() if k not in moved}


def check_connect(dialect: Dialect, cparams: dict[str, Any]) -> None:
    """Refuse, at a connection of any engine, the arguments its driver does not take
    (:func:`takes`), naming the engine's side and driver; turn a number given as text
    into the number where the driver takes it as given (PyMySQL: ``?port=abc`` was its
    ``ValueError``).

    Raises:
        DatabaseURLError: An argument the driver does not take, or a number that is not
            one.
    """
    family = DIALECTS.get(dialect.name)
    driver = dialect.driver
    if family is None or driver not in family.driver_modules:
        return
    side = "async" if dialect.is_async else "sync"
    refused = sorted(n for n in cparams if not takes(family, driver, n))
    if refused:
        raise DatabaseURLError(
            f"The {side} engine's driver {dialect.name}+{driver} takes no connection "
            f"argument {', '.join(map(repr, refused))}: remove it from the URL's query "
            "string or connect_args (from_conn_string gives each engine the arguments "
            "its own driver takes)."
        )
    named = (parameters(family, driver) or Parameters({}, True)).named
    for name, value in cparams.items():
        if named.get(name) is int and isinstance(value, str):
            try:
                cparams[name] = int(value)
            except ValueError:
                raise DatabaseURLError(
                    f"The {dialect.name}+{driver} connection argument {name!r} is a "
                    f"number, not {masked_text(repr(value))}: fix it in the URL."
                ) from None
