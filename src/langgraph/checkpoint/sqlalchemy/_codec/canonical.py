"""The one JSON form of metadata and metadata filters, the same on every dialect.

:func:`canonical_json` checks a value and returns the copy that is stored or compared;
the metadata filters of the query builders (:mod:`.dialects`) and the saver's ``put``
both go through it.
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Mapping
from typing import Any

import orjson

__all__ = [
    "MAX_DEPTH",
    "MAX_FILTER_KEYS",
    "TooDeepError",
    "canonical_json",
    "canonical_text",
    "json_string",
    "json_text",
    "scalar_as_stored",
]

#: The deepest nesting of dicts and lists in stored metadata, the metadata dict itself
#: counting as one level. MariaDB's ``JSON_VALID`` (the metadata column's check) refuses
#: a document 32 levels deep (its ``JSON_DEPTH_LIMIT``, measured on 10.11); MySQL allows
#: 100, PostgreSQL and SQLite far more. A metadata filter ``{key: value}`` is held to the
#: same rule, so its values may nest one level less.
MAX_DEPTH = 31

#: The most keys of one ``list(filter=...)``. Each key is one condition: SQLite refuses
#: a query whose conditions nest 1,000 deep ("Expression tree is too large", measured
#: from about 990 keys); LangGraph's own filters use one to three.
MAX_FILTER_KEYS = 100


class TooDeepError(ValueError):
    """A JSON value nests dicts and lists deeper than allowed (see :data:`MAX_DEPTH`)."""


def check_depth(value: Any, limit: int) -> None:
    """Refuse ``value`` when its dicts and lists nest more than ``limit`` levels (a
    scalar is 0 levels), without recursion: any depth, even a cycle, gives the error
    and never a ``RecursionError``.

    Raises:
        TooDeepError: Deeper than ``limit``.
    """
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (Mapping, list, tuple)):
            depth += 1
            if depth > limit:
                raise TooDeepError(
                    f"dicts and lists nest more than {limit} levels deep; the limit is "
                    f"{MAX_DEPTH} levels for a metadata document (counting itself), the "
                    "most every supported database stores (MariaDB refuses 32). Flatten "
                    "it, or store the deep part as a JSON string"
                )
            children = item.values() if isinstance(item, Mapping) else item
            stack.extend((child, depth) for child in children)


def canonical_json(value: Any, *, depth: int = MAX_DEPTH) -> Any:
    """Check that ``value`` is JSON and return the copy that is stored or compared.

    The rules applied to metadata and metadata filters on every dialect: NUL characters
    are removed from every string, keys included (LangGraph already strips them from
    top-level strings; PostgreSQL's JSONB cannot hold them at all); integers must fit in
    a signed 64 bits; strings must be valid Unicode (no lone surrogates). Tuples become
    lists.

    ``depth``: the most levels of dicts and lists (:data:`MAX_DEPTH` for a metadata
    document), checked first so that no depth can exhaust the stack.

    Raises:
        TypeError: A key is not a string, or a value is not JSON (str, int, float, bool,
            None, list, tuple, dict).
        ValueError: A float is NaN or infinite, an integer needs more than 64 bits, or a
            string holds a lone surrogate.
        TooDeepError: Nested more than ``depth`` levels.
    """
    try:
        return _exact(value, depth)
    except (_Slow, TypeError, ValueError):
        pass  # the general path checks depth first, and raises its own errors
    check_depth(value, depth)
    return _canonical(value)


class _Slow(Exception):
    """:func:`_exact` met what it leaves to the general path: a subclass, another
    mapping, or anything the general path refuses (so that its error is the one raised)."""


def _exact(value: Any, depth: int) -> Any:
    """:func:`canonical_json` of a value made of the exact built-in JSON types, in one
    pass whose recursion stops at ``depth`` levels; anything else (subclasses, other
    mappings, a value the general path refuses) raises :class:`_Slow` for the general
    path (a copy the same, by the same rules; its errors the only ones raised)."""
    t = type(value)
    if t is str:
        if value.isascii():
            return value.replace("\x00", "") if "\x00" in value else value
        return json_string(value)
    if t is dict:
        if depth <= 0:
            raise _Slow
        out: dict[str, Any] = {}
        for k, v in value.items():
            if type(k) is not str:
                raise _Slow
            if not k.isascii() or "\x00" in k:
                k = json_string(k)
            out[k] = _exact(v, depth - 1)
        return out
    if t is int:
        if _INT64_MIN <= value <= _INT64_MAX:
            return value
        raise _Slow
    if t is float:
        if value - value == 0.0:  # NaN and infinities are not
            return value
        raise _Slow
    if value is None or t is bool:
        return value
    if t is list or t is tuple:
        if depth <= 0:
            raise _Slow
        return [_exact(v, depth - 1) for v in value]
    raise _Slow


def _canonical(value: Any) -> Any:
    """:func:`canonical_json` of a value whose depth was checked."""
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise TypeError(f"JSON object keys must be strings, got {type(k).__name__}")
            out[json_string(k)] = _canonical(v)
        return out
    if isinstance(value, (list, tuple)):
        return [_canonical(v) for v in value]
    if isinstance(value, str):
        return json_string(value)
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        if not _INT64_MIN <= value <= _INT64_MAX:
            raise ValueError(
                f"{value} does not fit a signed 64-bit integer, the largest JSON integer "
                "every supported database stores exactly; store it as a string"
            )
        return value
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise ValueError(f"{value!r} is not a JSON number")
        return value
    raise TypeError(f"{type(value).__name__} is not a JSON value")


_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def canonical_text(value: Any, *, depth: int = MAX_DEPTH) -> tuple[Any, str]:
    """:func:`canonical_json` of ``value`` and its JSON text: what ``orjson.dumps``
    writes (no spaces), DEL and non-ASCII characters escaped as ``json.dumps`` escapes
    them (``\\u00e9``; above U+FFFF a surrogate pair). The text stored for it, the same byte
    for byte whichever path made it, and ASCII as it always was: MariaDB's
    ``JSON_EQUALS`` does not read escapes, so a filter value (escaped) matches values
    stored before and after.

    A dict made only of the exact built-in JSON types (str keys, str, int of 64 bits,
    finite float, bool, None, dict, list; at most ``depth`` levels) is already
    canonical when its strings hold no NUL and no surrogate: it is checked by one walk
    over its values and written by orjson (which refuses a surrogate), and returned
    itself rather than copied. Anything else (tuples, subclasses, other mappings, NUL
    characters, surrogates, or what must be refused) takes :func:`canonical_json`,
    whose copy orjson writes, and raises as it does.

    Raises:
        TypeError: As :func:`canonical_json`.
        ValueError: As :func:`canonical_json` (:class:`TooDeepError` included).
    """
    if type(value) is dict and depth >= 1 and _plain(value, depth):
        try:
            data = _orjson_dumps(value)
        except _OrjsonError:  # a surrogate: the general path refuses it
            pass
        else:
            # orjson writes NUL as \u0000: such values take the general path. (find,
            # not `in`: bytes' `in` first tries the needle as an int and formats a
            # TypeError, 2,300 instructions a call.)
            if data.find(b"\\u0000") < 0:
                return value, _ascii(data)
    checked = canonical_json(value, depth=depth)
    return checked, _ascii(_orjson_dumps(checked, default=_builtin))


def _ascii(data: bytes) -> str:
    """orjson's UTF-8 text with the characters it writes raw and ``json.dumps``
    escapes (DEL and non-ASCII; they occur inside strings only) escaped as
    ``json.dumps`` escapes them."""
    if not data.isascii():
        data = data.decode().encode("ascii", _ESCAPES)
    # replace returns the bytes themselves when DEL is absent (no `in` test: see
    # canonical_text)
    return data.replace(b"\x7f", b"\\u007f").decode()


def _escape(error: UnicodeError) -> tuple[str, int]:
    """:func:`_ascii`'s codec error handler: a run of non-ASCII characters as
    ``\\uXXXX`` escapes (lower-case hex; above U+FFFF, a surrogate pair)."""
    if not isinstance(error, UnicodeEncodeError):
        raise error
    out = []
    for ch in error.object[error.start : error.end]:
        n = ord(ch)
        if n > 0xFFFF:
            n -= 0x10000
            out.append(f"\\u{0xD800 | (n >> 10):04x}\\u{0xDC00 | (n & 0x3FF):04x}")
        else:
            out.append(f"\\u{n:04x}")
    return "".join(out), error.end


_ESCAPES = "langgraph-checkpoint-sqlalchemy-json-ascii"
codecs.register_error(_ESCAPES, _escape)


def _builtin(value: Any) -> Any:
    """A subclass of a JSON scalar that :func:`canonical_json` keeps (an ``IntEnum``, a
    ``float`` subclass) as its built-in value, which ``json.dumps`` writes it as."""
    for base in (int, float, str):
        if isinstance(value, base):
            return base(value)
    raise TypeError(f"{type(value).__name__} is not a JSON value")


def _plain(value: Any, depth: int) -> bool:
    """Whether ``value``, an exact dict or list allowed ``depth`` >= 1 levels including
    itself, holds only str keys and values of the exact built-in JSON types that
    :func:`canonical_json` keeps as they are (its strings are checked on the encoded
    text). One loop a container, the checks written out: a call an element would
    double the walk's cost."""
    if type(value) is dict:
        for k, v in value.items():
            if type(k) is not str:
                return False
            t = type(v)
            if t is str or t is bool or v is None:
                continue
            if t is int:
                if _INT64_MIN <= v <= _INT64_MAX:
                    continue
                return False
            if t is float:
                if v - v == 0.0:  # NaN and infinities are not
                    continue
                return False
            if (t is dict or t is list) and depth > 1 and _plain(v, depth - 1):
                continue
            return False
        return True
    for v in value:
        t = type(v)
        if t is str or t is bool or v is None:
            continue
        if t is int:
            if _INT64_MIN <= v <= _INT64_MAX:
                continue
            return False
        if t is float:
            if v - v == 0.0:
                continue
            return False
        if (t is dict or t is list) and depth > 1 and _plain(v, depth - 1):
            continue
        return False
    return True


#: orjson's encoder (the official stores write values with it too): the canonical
#: copy holds only the types it writes as ``json.dumps`` would read them back.
_orjson_dumps = orjson.dumps
_OrjsonError = orjson.JSONEncodeError


def json_string(text: str) -> str:
    """``text`` with NUL characters removed (see :func:`canonical_json`).

    Raises:
        ValueError: ``text`` holds a lone surrogate.
    """
    text = text.replace("\x00", "")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        raise ValueError(f"{text[:40]!r} is not valid Unicode ({e.reason})") from None
    return text


def scalar_as_stored(value: Any) -> Any:
    """A filter value as stored metadata would hold it at the top: a string with NUL
    characters removed (see :func:`canonical_json`); anything else unchanged (dicts and
    lists are compared as their :func:`json_text`, which removes them too)."""
    return value.replace("\x00", "") if isinstance(value, str) else value


def json_text(value: Any, *, depth: int = MAX_DEPTH) -> str:
    """``value`` made canonical (:func:`canonical_json`) and written as JSON text.

    Raises:
        TypeError: As :func:`canonical_json`.
        ValueError: As :func:`canonical_json` (:class:`TooDeepError` included).
    """
    return json.dumps(canonical_json(value, depth=depth), allow_nan=False)
