"""Database URLs and connection strings as the package shows them (errors, CLI output,
logs, Alembic's environment): never a secret.

Two doors, for two kinds of text:

- :func:`shown_url` shows one *input* (a URL, a libpq connection string, a SQLite path
  that a user gave) whole, and shows only what it knows to be safe: a URL SQLAlchemy
  parses, its password field and every secret query parameter as ``***``; a libpq
  connection string that reads cleanly by libpq's own rules (:func:`read_conninfo`),
  every keyword one libpq knows, each secret value as ``***``. What it cannot classify
  (an open quote, a word without ``=``, an unknown or misspelt keyword such as
  ``pasword``, a URL SQLAlchemy cannot parse) is not shown at all (:data:`NOT_SHOWN`, or
  the URL's scheme alone): a list of forbidden forms would miss the next one.
- :func:`masked_text` masks a *message* that may quote inputs whole or in part (a
  driver's words, argparse's usage errors): each input it is handed is replaced by its
  shown form and each of its secret pieces (:func:`secret_pieces`) by ``***``; then
  whatever still looks like a secret is masked: a URL's user information, secret query
  parameters, and libpq ``keyword=value`` pairs whose keyword looks secret
  (:func:`is_secret_name`, ``PASSWORD = x``, ``pasword``, ``sslpassword``), quoted or not.
  By shape alone (a message whose input is not handed over) a value written with spaces
  and no quotes is masked only up to its first space: callers hand over their inputs.

SQLAlchemy's ``render_as_string(hide_password=True)`` hides the password field only: a
password given as a query parameter would be printed as is.

Imports SQLAlchemy only to parse a URL (text holding ``://``): the command line's parser
masks its usage errors before anything needs SQLAlchemy.
"""

from __future__ import annotations

import difflib
import re
from typing import TYPE_CHECKING, NamedTuple
from urllib.parse import quote, quote_plus, unquote_plus

if TYPE_CHECKING:
    from sqlalchemy.engine import URL

__all__ = [
    "LIBPQ_KEYWORDS",
    "NOT_SHOWN",
    "SECRET_PARAMETERS",
    "Conninfo",
    "conninfo_problem",
    "is_secret_name",
    "masked_text",
    "read_conninfo",
    "secret_pieces",
    "shown_url",
]

#: Shown instead of a connection string (or URL) that cannot be shown safely.
NOT_SHOWN = "the connection string (not shown: it may hold a password)"

#: Query parameters and libpq keywords whose values are secrets (compared in lower case);
#: :func:`is_secret_name` also takes any name that looks like one.
SECRET_PARAMETERS = frozenset(
    {
        "password",
        "passwd",
        "pass",
        "pwd",
        "sslpassword",
        "secret",
        "token",
        "api_key",
        "apikey",
        "oauth_client_secret",
        "scram_client_key",
        "scram_server_key",
    }
)

#: The keywords of libpq 18 (``PQconndefaults``): a connection string naming any other
#: is refused by libpq, and never shown here.
LIBPQ_KEYWORDS = frozenset(
    {
        "application_name",
        "channel_binding",
        "client_encoding",
        "connect_timeout",
        "dbname",
        "fallback_application_name",
        "gssdelegation",
        "gssencmode",
        "gsslib",
        "host",
        "hostaddr",
        "keepalives",
        "keepalives_count",
        "keepalives_idle",
        "keepalives_interval",
        "krbsrvname",
        "load_balance_hosts",
        "max_protocol_version",
        "min_protocol_version",
        "oauth_client_id",
        "oauth_client_secret",
        "oauth_issuer",
        "oauth_scope",
        "options",
        "passfile",
        "password",
        "port",
        "replication",
        "require_auth",
        "requirepeer",
        "scram_client_key",
        "scram_server_key",
        "service",
        "ssl_max_protocol_version",
        "ssl_min_protocol_version",
        "sslcert",
        "sslcertmode",
        "sslcompression",
        "sslcrl",
        "sslcrldir",
        "sslkey",
        "sslkeylogfile",
        "sslmode",
        "sslnegotiation",
        "sslpassword",
        "sslrootcert",
        "sslsni",
        "target_session_attrs",
        "tcp_user_timeout",
        "user",
    }
)

#: What a mistyped keyword most likely meant (difflib finds the rest).
_MEANT = {
    "pwd": "password",
    "pw": "password",
    "pass": "password",
    "passwd": "password",
    "db": "dbname",
    "database": "dbname",
    "username": "user",
    "hostname": "host",
    "server": "host",
}

#: Pieces of a name that make it a secret's, misspellings included (``pasword``,
#: ``pssword``, ``passwd``, ``pwd``, ``db_pass``, ``api_key``, ``oauth_client_secret``);
#: not ``keyword``.
_SECRET_NAME = re.compile(r"pass|pw|swor|secret|token|key(?!word)|cred|auth", re.IGNORECASE)

_QUOTES = "(a value with spaces goes in single quotes: keyword='a b c')"

#: What libpq's ``isspace`` skips between pairs (the C locale's white space).
_LIBPQ_SPACE = " \t\n\r\f\v"


def is_secret_name(name: str) -> bool:
    """Whether the query parameter or libpq keyword ``name`` (any case) may carry a
    secret: one of :data:`SECRET_PARAMETERS`, or a name holding ``pass``, ``pw``,
    ``swor``, ``secret``, ``token``, ``key`` (not ``keyword``), ``cred`` or ``auth``.
    It errs on the side of masking (``sslkey``, a file name, is masked too)."""
    return name.lower() in SECRET_PARAMETERS or _SECRET_NAME.search(name) is not None


# -- libpq connection strings -----------------------------------------------------------


class Conninfo(NamedTuple):
    """A libpq connection string as libpq reads it (``conninfo_parse`` of libpq's
    ``fe-connect.c``): ``keyword = value`` pairs apart by white space, a value in single
    quotes when it holds spaces, ``\\`` escaping the next character."""

    #: ``(keyword, value)`` as read (quotes and escapes removed), up to where libpq
    #: stops.
    pairs: list[tuple[str, str]]
    #: Where each value stands in the text (its quotes included).
    spans: list[tuple[int, int]]
    #: Why libpq stops reading, in words that quote nothing of the text; None when it
    #: reads to the end (a keyword may still be unknown: :func:`conninfo_problem`).
    stop: str | None


def read_conninfo(text: str) -> Conninfo:
    """``text`` read as libpq reads a connection string (see :class:`Conninfo`)."""
    pairs: list[tuple[str, str]] = []
    spans: list[tuple[int, int]] = []
    i, n = 0, len(text)
    while (i := _after_space(text, i)) < n:
        start = i
        while i < n and text[i] != "=" and text[i] not in _LIBPQ_SPACE:
            i += 1
        key = text[start:i]
        i = _after_space(text, i)
        if i >= n or text[i] != "=":
            return Conninfo(pairs, spans, f"item {len(pairs) + 1} has no '=' {_QUOTES}")
        i = _after_space(text, i + 1)
        quoted = i < n and text[i] == "'"
        value, end, closed = _libpq_value(text, i + quoted, quoted)
        if not closed:
            return Conninfo(
                pairs,
                spans,
                f"the single quote that opens value {len(pairs) + 1} is never closed "
                "(a quote inside a value is written \\': keyword='it\\'s')",
            )
        pairs.append((key, value))
        spans.append((i, end))
        i = end
    return Conninfo(pairs, spans, None)


def _after_space(text: str, i: int) -> int:
    while i < len(text) and text[i] in _LIBPQ_SPACE:
        i += 1
    return i


def _libpq_value(text: str, i: int, quoted: bool) -> tuple[str, int, bool]:
    """The value that starts at ``text[i]`` (after its opening quote when ``quoted``):
    ``(value, where it ends, whether it is closed)``; ``\\`` escapes the next character."""
    value = []
    while i < len(text):
        ch = text[i]
        if ch == "\\":
            value.append(text[i + 1 : i + 2])
            i += 2
        elif (ch == "'") if quoted else (ch in _LIBPQ_SPACE):
            return "".join(value), i + quoted, True
        else:
            value.append(ch)
            i += 1
    return "".join(value), len(text), not quoted


def conninfo_problem(info: Conninfo, keywords: frozenset[str] = LIBPQ_KEYWORDS) -> str | None:
    """Why libpq refuses the connection string ``info`` was read from, in words that
    quote nothing of it (item numbers, and the keyword it most likely meant), or None.

    Args:
        info: What :func:`read_conninfo` read.
        keywords: The keywords libpq knows (default: libpq 18's).
    """
    # In libpq's order: each pair's keyword is checked as it is read, before the next
    # pair (which may be the one it cannot read).
    for number, (key, _) in enumerate(info.pairs, 1):
        if key in keywords:
            continue
        before = info.pairs[number - 2][0] if number > 1 else ""
        if is_secret_name(before):
            hint = f" (if it is a piece of the value before it: {_QUOTES[1:-1]})"
        elif key.lower() in keywords:
            hint = f' (keywords are lower case: "{key.lower()}")'
        else:
            meant = _MEANT.get(key.lower()) or next(
                iter(difflib.get_close_matches(key.lower(), sorted(keywords), 1, 0.75)), None
            )
            hint = f' (did you mean "{meant}"?)' if meant else ""
        return f"the keyword of item {number} is not one libpq knows{hint}"
    return info.stop


def _looks_like_conninfo(text: str) -> bool:
    """Text to read as a connection string: it starts with ``keyword =``."""
    return re.match(r"\s*[A-Za-z_][A-Za-z0-9_]*\s*=", text) is not None


def _shown_conninfo(text: str) -> str | None:
    """``text`` with each secret value as ``***``, or None when libpq would not read it
    cleanly (then nothing of it is known safe)."""
    info = read_conninfo(text)
    if conninfo_problem(info) is not None:
        return None
    parts = []
    for key, value in info.pairs:
        shown = "***" if is_secret_name(key) else _shown_value(value)
        if shown is None:
            return None
        quote_it = not shown or any(c in shown for c in f"'\\{_LIBPQ_SPACE}")
        escaped = shown.replace("\\", "\\\\").replace("'", "\\'")
        parts.append(f"{key}='{escaped}'" if quote_it else f"{key}={shown}")
    return " ".join(parts)


def _shown_value(value: str) -> str | None:
    """A value inside a URL or connection string (a database name, a query parameter)
    as shown: a connection string or URL in it shown by the same rules (None when
    nothing of it is safe), anything else masked in place."""
    if _looks_like_conninfo(value):
        return _shown_conninfo(value)
    if "://" in value:
        shown = shown_url(value)
        return None if "not shown" in shown else shown
    return masked_text(value)


# -- inputs: shown whole ------------------------------------------------------------------


def shown_url(url: str | URL) -> str:
    """``url`` (what a user gave: a URL, a libpq connection string, a SQLite path) as
    text to show: its password and secret query parameters as ``***``; nothing of it
    when it cannot be read safely.

    Args:
        url: A URL, or text that may be one.

    Returns:
        The text to show: the URL with ``***`` for its secrets; a connection string
        libpq reads cleanly, with ``***`` for its secrets; :data:`NOT_SHOWN` for one it
        does not (or for other text with ``=`` that looks like one); ``scheme://`` and a
        note for a URL SQLAlchemy cannot parse; a path as it is.
    """
    shown = _shown(url)
    for piece in secret_pieces(url):  # a password that is also the user name, the host...
        if len(piece) > 3:
            shown = shown.replace(piece, "***")
    return shown


def _shown(url: str | URL) -> str:
    if not isinstance(url, str):
        return _shown_parsed(url)
    text = url
    if _looks_like_conninfo(text):
        return _shown_conninfo(text) or NOT_SHOWN
    if "://" not in text:
        return NOT_SHOWN if _garbled(text) else masked_text(text)
    from sqlalchemy.engine import make_url

    try:
        parsed = make_url(text)
    except Exception:  # SQLAlchemy's own words would quote a piece of it
        scheme = text.split("://", 1)[0]
        scheme = scheme if re.fullmatch(r"[A-Za-z0-9+.-]*", scheme) else "..."
        return f"{scheme}://... (the rest not shown: it may hold a password)"
    return _shown_parsed(parsed)


def _garbled(path: str) -> bool:
    """Whether ``path`` (not a URL) may be a connection string gone wrong rather than a
    file name: an ``=`` with white space or quotes, or after a secret-looking name."""
    if "=" not in path:
        return False
    if re.search(r"[\s'\"]", path):
        return True
    # the word before each '=' (split, not searched: a search was quadratic in a long word)
    return any(is_secret_name(re.split(r"[^\w-]", part)[-1]) for part in path.split("=")[:-1])


def _shown_parsed(url: URL) -> str:
    """A parsed URL as :func:`shown_url` shows it."""
    from sqlalchemy.engine import URL

    if url.host and "@" in url.host:
        # An unencoded '@' in the user name or password: SQLAlchemy took the text after
        # the first '@' as the host. Show the host after the last one, and no user name.
        rest = URL.create(
            url.drivername,
            host=url.host.rsplit("@", 1)[1],
            port=url.port,
            database=url.database,
            query=url.query,
        )
        return _shown_parsed(rest).replace("://", "://***@", 1)
    query: dict[str, str | tuple[str, ...]] = {}
    for key, value in url.query.items():
        values = (value,) if isinstance(value, str) else tuple(value)
        hidden = tuple("***" if is_secret_name(key) else _shown_value(v) or "***" for v in values)
        query[key] = hidden[0] if isinstance(value, str) else hidden
    database = url.database
    if database and url.get_backend_name() != "sqlite":
        database = _shown_value(database) or "***"
    elif database:
        database = "***" if _garbled(database) else masked_text(database)
    shown = url.set(
        username=url.username and (_shown_value(url.username) or "***"),
        host=url.host and (_shown_value(url.host) or "***"),
        database=database,
        query=query,
    )
    return shown.render_as_string(hide_password=True).replace("%2A%2A%2A", "***")


# -- messages: masked in place --------------------------------------------------------------

# ``scheme://USER:PASS@WORD@``: a user name or password holding an unencoded ``@``
# (where the user name ends is not known): the whole of it, up to the last ``@``.
_SEVERAL_AT = re.compile(r"(//)[^/?#@\s'\"]*@[^/?#\s'\"]*@")
# ``scheme://user:PASSWORD@``, and the mistyped ``scheme:user:PASSWORD@``,
# ``scheme:/user:PASSWORD@`` (no ``//``: refused as a URL, but shown in the error). As
# SQLAlchemy reads it, a password runs to the first '@' ('/', '?' and '#' included).
_PASSWORD_FIELD = re.compile(
    r"((?://|\b[a-z][a-z0-9+.-]{0,40}:/?)[^:/?#@\s'\"]*:)[^@\s'\"]*@", re.IGNORECASE
)
# A URL's query parameter, its name percent-decoded before it is judged.
_PARAMETER = re.compile(r"([?&])([^=&#\s?'\"]+)(=)([^&\s'\"]*)")
# A value masked already (by this module): left as it is, its closing quote with it.
_MASKED = re.compile(r"['\"]?\*\*\*['\"]?[),.;:]*")
# libpq's ``keyword = value`` whose keyword looks secret (:data:`_SECRET_NAME`): a value
# in single quotes (``\\`` escapes; an open quote runs to the end of the line), in double
# quotes (a mistake libpq reads otherwise), or bare up to white space. Other pairs are
# not matched, so that a value quoting a connection string is searched too.
_PAIR = re.compile(
    r"""(?:^|(?<=[\s'"(,;/]))(['"]?)"""
    rf"""((?=[\w.-]*?(?:{_SECRET_NAME.pattern}))[A-Za-z_][\w.-]*)\1(\s*=\s*)"""
    r"""('(?:[^'\\\n]|\\.)*(?:'|$)|"[^"\n]*(?:"|$)|\S*)""",
    re.MULTILINE | re.IGNORECASE,
)
# libpq's own words quote the piece of text it stumbled on: a piece of a value.
_LIBPQ_QUOTES = re.compile(r'(missing "=" after ")([^"]*)(")')


def _masked_pattern(text: str, collect: list[str] | None = None) -> str:
    """``text`` with every secret-shaped piece masked; each masked piece is added to
    ``collect`` when given."""

    def hidden(prefix: str, secret: str) -> str:
        if secret.strip("'\"") and not _MASKED.fullmatch(secret):
            if collect is not None:
                collect.extend({secret, secret.strip("'\"")})
            return f"{prefix}***"
        return prefix + secret

    def parameter(m: re.Match[str]) -> str:
        if not is_secret_name(unquote_plus(m[2])):
            return m[0]
        return hidden(m[1] + m[2] + m[3], m[4])

    def pair(m: re.Match[str]) -> str:
        return hidden(m[1] + m[2] + m[1] + m[3], m[4])

    def field(m: re.Match[str]) -> str:
        return hidden(m[1], m[0][len(m[1]) : -1]) + "@"

    def several(m: re.Match[str]) -> str:
        return hidden("//", m[0][2:-1]) + "@"

    # User information, word by word and up to a word's last '@' (a password ends at an
    # '@'): searched over the whole text, a long word of "a:a:a:..." took seconds.
    words = re.split(r"([\s'\"]+)", text)
    for i, word in enumerate(words):
        if "@" in word:
            end = word.rindex("@") + 1
            words[i] = _PASSWORD_FIELD.sub(field, _SEVERAL_AT.sub(several, word[:end])) + word[end:]
    text = _PARAMETER.sub(parameter, "".join(words))
    text = _PAIR.sub(pair, text)
    return _LIBPQ_QUOTES.sub(lambda m: hidden(m[1], m[2]) + m[3], text)


def secret_pieces(url: str | URL) -> list[str]:
    """The pieces of ``url`` (an input: a URL, a connection string, a path) that must
    never be shown, longest first: its password and secret parameter values (also
    percent-encoded, as a URL may hold them), and, for text that libpq or SQLAlchemy
    cannot read cleanly, every word of it that is not a libpq keyword.

    Args:
        url: A URL, or text that may be one.

    Returns:
        The pieces, each as it may appear in a message.
    """
    found: list[str] = []
    if not isinstance(url, str):
        values = [str(url.password)] if url.password is not None else []
        for key, value in url.query.items():
            if is_secret_name(key):
                values.extend([value] if isinstance(value, str) else value)
        for value in values:
            found += [value, quote(value, safe=""), quote_plus(value), quote(value)]
        return _longest_first(found)
    text = url
    _masked_pattern(text, found)
    if _looks_like_conninfo(text) or ("://" not in text and _garbled(text)):
        info = read_conninfo(text)
        if conninfo_problem(info) is None:
            for (key, value), (start, end) in zip(info.pairs, info.spans, strict=True):
                if is_secret_name(key):
                    found += [value, text[start:end]]
        else:  # nothing of it is known safe: every word but a keyword
            words = re.split(r"[\s='\"\\]+", text)
            found += [w for w in words if w and w not in LIBPQ_KEYWORDS]
    elif "://" in text:
        from sqlalchemy.engine import make_url

        rest = text.split("://", 1)[1]
        # The user information as written: up to the last '@', else (a password
        # SQLAlchemy would take for a port) up to the first '/'.
        userinfo = rest.rsplit("@", 1)[0] if "@" in rest else rest.split("/", 1)[0]
        try:
            parsed = make_url(text)
        except Exception:
            found += [rest, userinfo, userinfo.partition(":")[2]]
        else:
            found += secret_pieces(parsed)
            if parsed.host and "@" in parsed.host:  # an unencoded '@': all of it
                found += [userinfo, userinfo.partition(":")[2]]
    return _longest_first(found)


def _longest_first(pieces: list[str]) -> list[str]:
    return sorted({p for p in pieces if p and p != "***"}, key=lambda p: (-len(p), p))


def _may_hold_secret(given: str) -> bool:
    """Whether the input ``given`` may hold a secret: an ``=`` (a query parameter, a
    connection string), an ``@`` (user information), or a ``:`` after ``://`` (a
    password SQLAlchemy would take for a port). A plain word, a path and
    ``sqlite:///file.db`` do not (and need no SQLAlchemy to be told apart)."""
    return re.search(r"[=@]", given) is not None or ":" in given.partition("://")[2]


def masked_text(text: str, *inputs: str | URL | None) -> str:
    """``text`` (a message, or a URL that may not parse) with every secret masked in
    place: each of ``inputs`` (what the user gave) shown as :func:`shown_url` shows it
    and its :func:`secret_pieces` as ``***`` wherever the text quotes them (pieces of
    two or three characters only where they stand alone as a word; a one-character
    one is left to the patterns); then every URL's password field, secret query
    parameters and secret-looking libpq ``keyword=value`` pair.

    Args:
        text: The text to show.
        inputs: The URLs, connection strings or paths ``text`` may quote (None skipped).

    Returns:
        The text with ``***`` for each secret.
    """
    for given in inputs:
        if given is None or (isinstance(given, str) and not _may_hold_secret(given)):
            continue
        if isinstance(given, str) and len(given) > 2:
            for form in {given, repr(given)[1:-1]}:  # as given, and inside a repr()
                if form in text:
                    text = text.replace(form, shown_url(given))
        pieces = secret_pieces(given)
        for piece in _longest_first(pieces + [repr(p)[1:-1] for p in pieces]):
            if len(piece) > 3:
                text = text.replace(piece, "***")
            elif len(piece) > 1:
                text = re.sub(rf"(?<![\w*]){re.escape(piece)}(?![\w*])", "***", text)
    return _masked_pattern(text)
