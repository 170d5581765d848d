"""Database URLs as the package shows them (errors, CLI output, logs): never a secret.

SQLAlchemy's ``render_as_string(hide_password=True)`` hides the URL's password field
only; a password given as a query parameter (``?password=...``, libpq's
``sslpassword``, a token) would be printed as is.

Imports SQLAlchemy only in :func:`shown_url`: the command line's parser masks its usage
errors with :func:`masked_text` before anything needs SQLAlchemy.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sqlalchemy.engine import URL

__all__ = ["SECRET_PARAMETERS", "masked_text", "shown_url"]

#: Query parameters whose values are secrets (compared in lower case).
SECRET_PARAMETERS = frozenset(
    {"password", "passwd", "pass", "pwd", "sslpassword", "secret", "token", "api_key", "apikey"}
)

# ``scheme://USER:PASS@WORD@``: a user name or password holding an unencoded ``@``
# (where the user name ends is not known): the whole of it, up to the last ``@``.
_SEVERAL_AT = re.compile(r"(//)[^/?#@\s'\"]*@[^/?#\s'\"]*@", re.IGNORECASE)
# ``scheme://user:PASSWORD@`` and the mistyped ``scheme:user:PASSWORD@``,
# ``scheme:/user:PASSWORD@`` (no ``//``: refused as a URL, but shown in the error).
_PASSWORD_FIELD = re.compile(
    r"((?://|\b[a-z][a-z0-9+.-]*:/?)[^:/?#@\s'\"]*:)[^@/?#\s]*@", re.IGNORECASE
)
# A value already shown as ``***`` is left alone: masking a message twice must not eat
# the character after it (``...?password=***: connection failed``).
_SECRET_PARAMETER = re.compile(
    r"([?&](?:"
    + "|".join(sorted(SECRET_PARAMETERS, key=len, reverse=True))
    + r")=)(?!\*\*\*(?:[&#\s:'\"]|$))[^&#\s]*",
    re.IGNORECASE,
)


def masked_text(text: str) -> str:
    """``text`` (a URL that may not parse, or a message holding URLs) with every URL's
    password field and secret query parameters replaced by ``***`` in place."""
    text = _SEVERAL_AT.sub(r"\1***@", text)
    return _SECRET_PARAMETER.sub(r"\1***", _PASSWORD_FIELD.sub(r"\1***@", text))


def shown_url(url: str | URL) -> str:
    """``url`` as text with its password and secret query parameters shown as ``***``,
    even when it does not parse.

    Args:
        url: A URL, or text that may be one.

    Returns:
        The text to show.
    """
    from sqlalchemy.engine import URL, make_url

    if not isinstance(url, URL):
        try:
            url = make_url(url)
        except Exception:
            return masked_text(str(url))
    if url.host and "@" in url.host:
        # An unencoded '@' in the user name or password: SQLAlchemy took the text after
        # the first '@' as the host. Show the host after the last one, and no user name.
        masked = url.set(host=url.host.rsplit("@", 1)[1])
        masked = URL.create(
            masked.drivername, host=masked.host, port=masked.port, database=masked.database
        ).set(query=masked.query)
        return shown_url(masked).replace("://", "://***@", 1)
    query = {
        key: ("***" if key.lower() in SECRET_PARAMETERS else value)
        for key, value in url.query.items()
    }
    shown = url.set(query=query).render_as_string(hide_password=True)
    return shown.replace("=%2A%2A%2A", "=***")  # rendered URL-encoded
