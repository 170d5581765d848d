"""libpq connection strings (``"host=db dbname=app user=u"``), which
``PostgresSaver.from_conn_string`` takes: read by libpq itself (psycopg's
``conninfo_to_dict``) and turned into the ``postgresql+psycopg`` URL of the same
connection, so that such a string never becomes a SQLite file of that name
(:func:`._engine.engines.resolve_urls`).
"""

from __future__ import annotations

import re

from langgraph.checkpoint.sqlalchemy.errors import DatabaseURLError
from sqlalchemy.engine import URL

__all__ = ["conninfo_url", "is_conninfo"]

#: ``keyword =`` at the start: what a connection string begins with.
_STARTS_AS_CONNINFO = re.compile(r"^\s*(?P<key>[A-Za-z_][A-Za-z0-9_]*)\s*=")

_HOW = (
    "a libpq connection string is keyword=value pairs separated by spaces "
    "(host=db port=5432 dbname=app user=u), a value with spaces in single quotes"
)


def is_conninfo(text: str) -> bool:
    """Whether ``text`` (not a URL: no ``://``) is written as a libpq connection string,
    i.e. starts with ``keyword=``. It may still be a bad one (:func:`conninfo_url`)."""
    return _STARTS_AS_CONNINFO.match(text) is not None


def _pairs(text: str) -> dict[str, str]:
    """``text``'s keywords and values, as libpq reads them.

    Raises:
        DatabaseURLError: psycopg is not installed, or libpq refuses the text (an
            unknown keyword, a keyword without ``=``, a quote left open).
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
        first = _STARTS_AS_CONNINFO.match(text)
        key = first["key"] if first else "name"
        # libpq quotes the text it stumbled on, which may be a piece of a password
        # written with spaces and no quotes: its words are shown only without one.
        why = f" ({str(e).strip()})" if "password" not in text.lower() else ""
        raise DatabaseURLError(
            f"not a valid libpq connection string{why}: {_HOW}. For a SQLite file whose "
            f"name holds '=', write sqlite:///{key}=..."
        ) from None


def conninfo_url(text: str) -> URL:
    """The ``postgresql+psycopg`` URL of a libpq connection string: ``user``,
    ``password``, ``host``, ``port`` and ``dbname`` in the URL's fields (the password
    then shown as ``***``); a list of hosts, a socket folder and every other keyword in
    its query string, which psycopg hands to libpq as they are.

    Raises:
        DatabaseURLError: Not a valid connection string (libpq's reason: an unknown
            keyword, a keyword without ``=``, a quote left open; the message says how to
            name a SQLite file whose name holds ``=``), a port that is not a number, or
            psycopg is not installed.
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
