"""The masking of URLs and connection strings, as properties (hypothesis).

- :func:`.display.read_conninfo` reads a connection string as libpq does: over a hostile
  alphabet (quotes, backslashes, ``=``, tabs, newlines, keywords in any case), it finds
  the pairs libpq finds (psycopg's ``conninfo_to_dict``, which is libpq's parser) when
  libpq accepts the text, and a reason to refuse it when libpq does.
- A password of any characters (spaces, quotes, backslashes, ``=@%:/?&#``, non-ASCII)
  written in a URL's password field, as a query parameter, or in a connection string
  (quoted as libpq asks, or not) never shows in :func:`.display.shown_url` nor in
  :func:`.display.masked_text` of a message quoting it (whole, or inside a ``repr``),
  nor percent-encoded: only what libpq or SQLAlchemy would read as another keyword's
  value may show, and then not the password libpq reads.
- What is shown is shown right: a clean connection string shown reads back (by libpq) as
  the same pairs with ``***`` for the secret ones, and masking a shown URL again changes
  nothing.
"""

from __future__ import annotations

from urllib.parse import quote, quote_plus

import psycopg
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from psycopg import pq
from psycopg.conninfo import conninfo_to_dict
from sqlalchemy.engine import URL

from langgraph.checkpoint.sqlalchemy._codec.display import (
    NOT_SHOWN,
    conninfo_problem,
    is_secret_name,
    masked_text,
    read_conninfo,
    shown_url,
)

KEYWORDS = frozenset(o.keyword.decode() for o in pq.Conninfo.get_defaults())
SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

#: Pieces a connection string is made of, the hostile ones included.
PIECES = st.sampled_from(
    [
        "host",
        "port",
        "dbname",
        "password",
        "PASSWORD",
        "pasword",
        "sslpassword",
        "application_name",
        "=",
        " = ",
        " ",
        "\t",
        "\n",
        "'",
        "\\",
        "\\'",
        '"',
        "a",
        "b c",
        "5432",
        "Ж",
    ]
)

#: The two characters every generated password starts and ends with: in no other text.
MARK_START, MARK_END = "Ж", "Ψ"
PASSWORDS = st.builds(
    lambda middle: f"{MARK_START}{''.join(middle)}{MARK_END}",
    st.lists(st.sampled_from([*"ab Z9'\"\\=@%:/?&#;+,()\t", "é", "host=x", " pw"]), max_size=10),
)


def libpq_reads(text: str) -> dict[str, str] | None:
    """The pairs libpq reads from ``text``; None when it refuses it."""
    try:
        return conninfo_to_dict(text)
    except psycopg.Error:
        return None


#: libpq's reasons (its words) and ours (words that quote nothing of the text).
REASONS = {
    "invalid connection option": "is not one libpq knows",
    'missing "="': "has no '='",
    "unterminated quoted string": "is never closed",
}


@SETTINGS
@given(st.lists(PIECES, max_size=14).map("".join))
def test_connection_strings_are_read_as_libpq_reads_them(text: str) -> None:
    ours = read_conninfo(text)
    problem = conninfo_problem(ours, KEYWORDS)
    try:
        theirs = conninfo_to_dict(text)
    except psycopg.Error as e:
        assert problem is not None, text
        (reason,) = [ours for theirs, ours in REASONS.items() if theirs in str(e)]
        assert reason in problem, (text, str(e), problem)  # the same reason as libpq's
    else:
        assert problem is None, (text, problem)
        assert dict(ours.pairs) == theirs


def shown_pieces(password: str, shown: str) -> list[str]:
    """The pieces of ``password`` (four characters or more, holding one of its marks),
    as written or percent-encoded, found in ``shown``."""
    found = []
    for written in {password, quote(password, safe=""), quote_plus(password), repr(password)}:
        for i in range(len(written)):
            for j in range(i + 4, len(written) + 1):
                piece = written[i:j]
                marked = any(m in piece or quote(m) in piece for m in (MARK_START, MARK_END))
                if marked and piece in shown:
                    found.append(piece)
    return found


def escaped(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def forms(password: str) -> dict[str, tuple[str, str | None]]:
    """Ways to write ``password``: ``{name: (text, the password as read)}``; for a
    connection string written without quotes, the password libpq reads (None when
    libpq refuses the string: then nothing of it may show)."""
    url = URL.create("postgresql+psycopg", "u", password, "db", 5432, "app")
    query = URL.create("postgresql+psycopg", "u", None, "db", database="app").update_query_dict(
        {"sslpassword": password}
    )
    raw = f"host=db port=5432 password={password} dbname=app"
    upper = f"host=db PASSWORD = {password}"
    return {
        "url-field": (url.render_as_string(hide_password=False), password),
        "url-query": (query.render_as_string(hide_password=False), password),
        "kv-quoted": (f"host=db password={escaped(password)} dbname=app", password),
        "kv-sslpassword": (f"sslpassword = {escaped(password)} host=db", password),
        "kv-unquoted": (raw, (libpq_reads(raw) or {}).get("password")),
        "kv-upper": (upper, None),
    }


@SETTINGS
@given(PASSWORDS)
def test_no_password_is_shown(password: str) -> None:
    for name, (text, read) in forms(password).items():
        shown = shown_url(text)
        message = f"error: bad database URL {text!r}: {text} failed"
        masked = masked_text(message, text)
        for what, out in (("shown_url", shown), ("masked_text", masked)):
            if read is None or read == password:
                assert not shown_pieces(password, out), (name, text, what, out)
            else:  # libpq reads another password than the one written: that one is hidden
                assert not shown_pieces(read, out) or len(read) < 4, (name, text, what, out)


@SETTINGS
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["host", "port", "dbname", "user", "password", "sslpassword"]),
            st.text(alphabet=st.sampled_from(list("ab9 '\\é")), max_size=6),
        ),
        min_size=1,
        max_size=5,
    )
)
def test_a_shown_connection_string_reads_back(pairs: list[tuple[str, str]]) -> None:
    # (a password that is also in another value, the host say, is hidden there too)
    secrets = [escaped(v) for k, v in pairs if is_secret_name(k) and v]
    others = [escaped(v) for k, v in pairs if not is_secret_name(k)]
    assume(not any(s[1:-1] in o or s in o for s in secrets for o in others))
    text = " ".join(f"{key}={escaped(value)}" for key, value in pairs)
    shown = shown_url(text)
    assert shown != NOT_SHOWN
    expected = {key: "***" if is_secret_name(key) else value for key, value in pairs}
    assert conninfo_to_dict(shown) == expected
    assert masked_text(shown) == shown  # masking what is shown changes nothing


@SETTINGS
@given(PASSWORDS, st.sampled_from(["sslpassword", "PASSWORD", "token", "pass%77ord"]))
def test_a_shown_url_is_left_as_it_is(password: str, parameter: str) -> None:
    url = f"postgresql+psycopg://u:{quote(password, safe='')}@db/app?{parameter}={quote(password)}"
    shown = shown_url(url)
    assert not shown_pieces(password, shown), shown
    assert masked_text(shown) == shown


@pytest.mark.parametrize(
    "text",
    ["host=db password=a b", "host=db pasword=x", "host=db password='x", "'password'=x y"],
)
def test_a_refused_string_is_not_shown(text: str) -> None:
    assert shown_url(text) == NOT_SHOWN
