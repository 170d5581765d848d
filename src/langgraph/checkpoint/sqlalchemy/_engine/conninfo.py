"""libpq connection strings (``"host=db dbname=app user=u"``), which
``PostgresSaver.from_conn_string`` takes: read by libpq itself (psycopg's
``conninfo_to_dict``) and turned into the ``postgresql+psycopg`` URL of the same
connection, so that such a string never becomes a SQLite file of that name
(:func:`._engine.engines.resolve_urls`).

A string libpq refuses is never quoted back, not even in part (libpq's own words may
quote a piece of a password): the error names the item that stopped libpq and what was
likely meant (:func:`.display.conninfo_problem`).
"""

from __future__ import annotations

import re

from langgraph.checkpoint.sqlalchemy._codec.display import (
    NOT_SHOWN,
    conninfo_problem,
    read_conninfo,
)
from langgraph.checkpoint.sqlalchemy.errors import DatabaseURLError
from sqlalchemy.engine import URL

__all__ = ["conninfo_url", "is_conninfo"]

#: ``keyword =`` at the start: what a connection string begins with.
_STARTS_AS_CONNINFO = re.compile(r"^\s*(?P<key>[A-Za-z_][A-Za-z0-9_]*)\s*=")

_HOW = (
    "A libpq connection string is keyword=value pairs separated by spaces "
    "(host=db port=5432 dbname=app user=u)"
)


def is_conninfo(text: str) -> bool:
    """Whether ``text`` (not a URL: no ``://``) is written as a libpq connection string,
    i.e. starts with ``keyword=``. It may still be a bad one (:func:`conninfo_url`)."""
    return _STARTS_AS_CONNINFO.match(text) is not None


def _pairs(text: str) -> dict[str, str]:
    """``text``'s keywords and values, as libpq reads them.

    Raises:
        DatabaseURLError: psycopg is not installed, or libpq refuses the text (an
            unknown keyword, a keyword without ``=``, a quote left open). The message
            shows nothing of the text: it may hold a password.
    """
    try:
        import psycopg
        from psycopg.conninfo import conninfo_to_dict
    except ImportError:
        raise DatabaseURLError(
            "a libpq connection string (keyword=value ...) names a PostgreSQL database, "
            "and psycopg, which reads it, is not installed: pip install 'psycopg[binary]' "
            "(or give a postgresql:// URL)"
        ) from None
    try:
        return {key: str(value) for key, value in conninfo_to_dict(text).items()}
    except psycopg.Error as e:
        refused = str(e)
    # Raised here, not in the except block: libpq's words, which may quote a piece of a
    # password written with spaces and no quotes, are not kept as the error's context.
    raise DatabaseURLError(_refusal(text, refused))


#: libpq's words about a connection string it refuses, in the forms known to quote
#: nothing but a keyword or a piece of the text (the quoted part is masked).
_LIBPQ_REFUSALS = re.compile(
    r'(?:invalid connection option|missing "=" after) "[^"]*"(?: in connection info string)?'
    r"|unterminated quoted string in connection info string"
)


def _refusal(text: str, refused: str) -> str:
    """Why libpq refused ``text``, in words that show nothing of it: the item that
    stopped it and what was likely meant (:func:`.display.conninfo_problem`, with the
    keywords of the libpq psycopg is linked to), else libpq's own reason when it has a
    known form (its quoted piece masked)."""
    from psycopg import pq

    keywords = frozenset(o.keyword.decode() for o in pq.Conninfo.get_defaults())
    why = conninfo_problem(read_conninfo(text), keywords)
    if why is None:
        known = _LIBPQ_REFUSALS.search(refused)
        why = re.sub(r'"[^"=]*"', '"***"', known[0]) if known else "libpq refused it"
    return (
        f"{NOT_SHOWN} is not one libpq reads: {why}. {_HOW}; for a SQLite file whose name "
        "holds '=', write sqlite:///path"
    )


def conninfo_url(text: str) -> URL:
    """The ``postgresql+psycopg`` URL of a libpq connection string: ``user``,
    ``password``, ``host``, ``port`` and ``dbname`` in the URL's fields (the password
    then shown as ``***``); a list of hosts, a socket folder and every other keyword in
    its query string, which psycopg hands to libpq as they are.

    Raises:
        DatabaseURLError: Not a valid connection string (the item libpq stops at: an
            unknown keyword, a keyword without ``=``, a quote left open; the message
            shows nothing of the text, and says how to name a SQLite file whose name
            holds ``=``), a port that is not a number, or psycopg is not installed.
    """
    fields: dict[str, str] = {}
    query: dict[str, str] = {}
    for key, value in _pairs(text).items():
        if key in ("user", "password", "dbname"):
            fields[key] = value
        else:
            query[key] = value
    host, port = query.pop("host", None), query.pop("port", None)
    if host and ("," in host or host.startswith("/")):
        query["host"] = host  # several hosts, or a socket folder: libpq reads them
        if port is not None:
            query["port"] = port
        host = port = None
    if port is not None and not port.isdigit():
        raise DatabaseURLError(f"port={port!r} in the libpq connection string is not a number")
    return URL.create(
        "postgresql+psycopg",
        username=fields.get("user"),
        password=fields.get("password"),
        host=host or None,
        port=int(port) if port else None,
        database=fields.get("dbname"),
        query=query,
    )
