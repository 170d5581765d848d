"""libpq connection strings (``"host=db dbname=app user=u"``), which
``PostgresSaver.from_conn_string`` takes: read by libpq's rules and turned into the
``postgresql+psycopg`` URL of the same connection, so that such a string never becomes
a SQLite file of that name (:func:`._engines.resolve_urls`).

libpq's rules: ``keyword = value`` pairs separated by whitespace (spaces around ``=``
allowed); a value is either a run of non-blank characters or single-quoted (a quoted
value may hold spaces); inside either, a backslash takes the next character as it is
(``\\'``, ``\\\\``).
"""

from __future__ import annotations

import re

from sqlalchemy.engine import URL

from .errors import DatabaseURLError

__all__ = ["LIBPQ_KEYWORDS", "conninfo_url", "is_conninfo"]

#: The keywords libpq takes in a connection string (PostgreSQL 17's list).
LIBPQ_KEYWORDS = frozenset(
    {
        "host", "hostaddr", "port", "dbname", "user", "password", "passfile",
        "require_auth", "channel_binding", "connect_timeout", "client_encoding", "options",
        "application_name", "fallback_application_name", "keepalives", "keepalives_idle",
        "keepalives_interval", "keepalives_count", "tcp_user_timeout", "replication",
        "gssencmode", "sslmode", "requiressl", "sslnegotiation", "sslcompression", "sslcert",
        "sslkey", "sslpassword", "sslcertmode", "sslrootcert", "sslcrl", "sslcrldir",
        "sslsni", "requirepeer", "ssl_min_protocol_version", "ssl_max_protocol_version",
        "krbsrvname", "gsslib", "gssdelegation", "service", "target_session_attrs",
        "load_balance_hosts",
    }
)  # fmt: skip

#: ``keyword =`` at the start: what a connection string begins with.
_STARTS_AS_CONNINFO = re.compile(r"^\s*[A-Za-z_][A-Za-z0-9_]*\s*=")

_HOW = (
    "a libpq connection string is keyword=value pairs separated by spaces "
    "(host=db port=5432 dbname=app user=u), a value with spaces in single quotes"
)


def is_conninfo(text: str) -> bool:
    """Whether ``text`` (not a URL: no ``://``) is written as a libpq connection string,
    i.e. starts with ``keyword=``. It may still be a bad one (:func:`conninfo_url`)."""
    return _STARTS_AS_CONNINFO.match(text) is not None


def _pairs(text: str) -> list[tuple[str, str]]:
    """``text``'s ``(keyword, value)`` pairs, values unquoted by libpq's rules.

    Raises:
        DatabaseURLError: An unknown keyword, a keyword without ``=``, or a quote left
            open.
    """
    pairs: list[tuple[str, str]] = []
    i, n = 0, len(text)
    while True:
        while i < n and text[i].isspace():
            i += 1
        if i == n:
            return pairs
        start = i
        while i < n and not text[i].isspace() and text[i] != "=":
            i += 1
        key = text[start:i]
        if key not in LIBPQ_KEYWORDS:
            raise DatabaseURLError(
                f"{key!r} is not a libpq keyword (the text starts as a libpq connection "
                f"string, {key}=...): {_HOW}. For a SQLite file whose name holds '=', "
                f"write sqlite:///{key}=..."
            )
        while i < n and text[i].isspace():
            i += 1
        if i == n or text[i] != "=":
            raise DatabaseURLError(f"{key!r} has no '=' after it: {_HOW}.")
        i += 1
        while i < n and text[i].isspace():
            i += 1
        value: list[str] = []
        quoted = i < n and text[i] == "'"
        i += quoted
        while i < n and (text[i] != "'" if quoted else not text[i].isspace()):
            if text[i] == "\\" and i + 1 < n:
                i += 1
            value.append(text[i])
            i += 1
        if quoted:
            if i == n:
                raise DatabaseURLError(f"the quoted value of {key!r} is not closed: {_HOW}.")
            i += 1
        pairs.append((key, "".join(value)))


def conninfo_url(text: str) -> URL:
    """The ``postgresql+psycopg`` URL of a libpq connection string: ``user``,
    ``password``, ``host``, ``port`` and ``dbname`` in the URL's fields (the password
    then shown as ``***``); a list of hosts, a socket folder and every other keyword in
    its query string, which psycopg hands to libpq as they are.

    Raises:
        DatabaseURLError: Not a valid connection string: an unknown keyword (the
            message says how to name a SQLite file whose name holds ``=``), a keyword
            without ``=``, a quote left open, a port that is not a number.
    """
    fields: dict[str, str] = {}
    query: dict[str, str] = {}
    for key, value in _pairs(text):
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
