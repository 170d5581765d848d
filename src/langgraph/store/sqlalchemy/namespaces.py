"""Namespaces as the store keeps them: the stored text, prefix ranges, match conditions.

A namespace ``("users", "u1")`` is stored as ``"users\\x01u1"`` (:data:`.tables.SEPARATOR`,
which sorts below any label character: text order is tuple order). What lives here is
pure Python and SQLAlchemy expressions: encoding and checking names, the condition "this
namespace or one below it" (a primary-key range), and the regular expression of a
``list_namespaces`` match condition (``*`` matches exactly one label), which each dialect
runs with its own operator (:meth:`.QueryBuilder.regexp_match`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langgraph.store.base import InvalidNamespaceError, MatchCondition

from langgraph.checkpoint.sqlalchemy.errors import StoreRequestError
from langgraph.store.sqlalchemy.tables import KEY_MAX_LENGTH, NAMESPACE_MAX_LENGTH, SEPARATOR
from sqlalchemy import ColumnElement, and_, bindparam

__all__ = [
    "MAX_CONDITIONS",
    "bound_range",
    "bounds",
    "check_conditions",
    "check_key",
    "decode",
    "encode",
    "literal_head",
    "match_pattern",
    "under",
]

_NEXT = chr(ord(SEPARATOR) + 1)

#: Most match conditions of one ``list_namespaces`` (``ListNamespacesOp``): each is a
#: range and a regular expression of the statement, and SQLite refuses a statement whose
#: conditions nest about 1,000 deep ("Expression tree is too large", from about 500
#: conditions); ``list_namespaces(prefix=..., suffix=...)`` gives two.
MAX_CONDITIONS = 100


def encode(namespace: Sequence[str], *, prefix: bool = False) -> str:
    """The stored text of ``namespace``.

    Args:
        namespace: Its labels (LangGraph has checked that they are non-empty strings
            without ``.`` or NUL).
        prefix: A search prefix (may be empty) rather than an item's namespace.

    Raises:
        InvalidNamespaceError: A label holds ``"\\x01"`` (the stored separator), is
            not valid Unicode, or the namespace is longer than
            :data:`.tables.NAMESPACE_MAX_LENGTH` characters joined.
    """
    for label in namespace:
        if not isinstance(label, str) or not label:
            raise InvalidNamespaceError(
                f"Namespace labels must be non-empty strings, got {label!r} in {namespace}"
            )
        if SEPARATOR in label:
            raise InvalidNamespaceError(
                f"Invalid namespace label {label[:40]!r} in {namespace[:3]}: labels cannot hold "
                "'\\x01', the separator of stored namespaces."
            )
        try:
            label.encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidNamespaceError(
                f"Invalid namespace label {label[:40]!r}: not valid Unicode (a lone surrogate)."
            ) from None
    text = SEPARATOR.join(namespace)
    if len(text) > NAMESPACE_MAX_LENGTH:
        what = "prefix" if prefix else "namespace"
        raise InvalidNamespaceError(
            f"The {what} {tuple(label[:20] for label in namespace[:3])}... is {len(text)} "
            "characters long joined; "
            f"the store keeps namespaces of at most {NAMESPACE_MAX_LENGTH}. Use shorter "
            "labels (an id rather than a text)."
        )
    return text


def decode(text: str) -> tuple[str, ...]:
    """The namespace of a stored text (:func:`encode`'s inverse)."""
    return tuple(str(text).split(SEPARATOR)) if text else ()


def check_key(key: object) -> str:
    """An item key checked: a string of 1 to :data:`.tables.KEY_MAX_LENGTH` characters,
    valid Unicode, without NUL.

    Raises:
        TypeError: Not a string.
        ValueError: Empty, too long, not valid Unicode, or holding NUL.
    """
    if (
        type(key) is str
        and 0 < len(key) <= KEY_MAX_LENGTH
        and key.isascii()  # no surrogate
        and "\x00" not in key
    ):
        return key
    if not isinstance(key, str):
        raise TypeError(f"item keys must be strings, got {type(key).__name__}")
    if not key:
        raise ValueError("item keys cannot be empty")
    if len(key) > KEY_MAX_LENGTH:
        raise ValueError(
            f"the key {key[:40]!r}... is {len(key)} characters long; the store keeps keys "
            f"of at most {KEY_MAX_LENGTH}. Use an id or a digest as the key."
        )
    try:
        key.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(f"the key {key[:40]!r} is not valid Unicode") from None
    if "\x00" in key:
        raise ValueError(
            f"the key {key[:40]!r} holds a NUL character (\\x00), which PostgreSQL's text "
            "columns refuse: keys are the same on every database, so it is refused "
            "everywhere. Remove it or encode the key."
        )
    return key


def under(column: Any, prefix: str) -> ColumnElement[bool] | None:
    """Condition: ``column`` is the namespace ``prefix`` (stored text) or one below it.
    None for the empty prefix (every namespace). One range of the primary key."""
    if not prefix:
        return None
    # One range: the texts from ``prefix`` up to ``prefix + "\x02"`` are ``prefix`` and
    # ``prefix + "\x01..."`` (no label holds a character below "\x02").
    return and_(column >= prefix, column < prefix + _NEXT)


def bound_range(column: Any) -> list[ColumnElement[bool]]:
    """The conditions of :func:`under` with the range bound as the parameters ``b_low``
    and ``b_high`` (their values :func:`bounds`), for a statement built once."""
    return [column >= bindparam("b_low"), column < bindparam("b_high")]


def bounds(prefix: str) -> tuple[str, str]:
    """The range ``[low, high)`` of :func:`under` for a non-empty prefix."""
    return prefix, prefix + _NEXT


def literal_head(condition: MatchCondition) -> tuple[str, ...]:
    """The labels a prefix condition fixes before its first wildcard (empty for a
    suffix condition): a range of the primary key that narrows the regular expression."""
    if condition.match_type != "prefix":
        return ()
    head: list[str] = []
    for label in condition.path:
        if label == "*":
            break
        head.append(label)
    return tuple(head)


def _escaped(label: str) -> str:
    # Every ASCII character that is not a letter or digit is escaped with a backslash:
    # a literal in PostgreSQL's, MariaDB's (PCRE), MySQL's (ICU) and Python's regular
    # expressions alike (re.escape's output is Python's own).
    return "".join("\\" + ch if ch.isascii() and not ch.isalnum() else ch for ch in label)


# The separator itself, not an escape: PostgreSQL reads ``\x01abc`` as one hexadecimal
# escape (every hex digit that follows), so a label starting with a-f would be eaten.
_ANY = "[^" + SEPARATOR + "]+"


def match_pattern(condition: MatchCondition, end: str = "\\Z") -> str | None:
    """The regular expression of a ``list_namespaces`` match condition over stored
    namespace text, or None when it constrains nothing (an empty path).

    ``*`` matches exactly one label, as in ``InMemoryStore``; a prefix
    condition matches the namespace or one below it, a suffix condition the namespace or
    one that ends with it.

    Args:
        condition: The match condition.
        end: The dialect's anchor at the very end of the text
            (:attr:`.QueryBuilder.regexp_end`; ``$`` also matches before a final newline
            in Python's and PCRE's syntax, and labels may end with one).

    Raises:
        ValueError: Not a ``"prefix"`` or ``"suffix"`` condition.
        InvalidNamespaceError: A label of the path holds ``"\\x01"``, or the shortest
            namespace the condition matches is longer than
            :data:`.tables.NAMESPACE_MAX_LENGTH` characters joined (none is stored).
    """
    if condition.match_type not in ("prefix", "suffix"):
        raise ValueError(f"match_type must be 'prefix' or 'suffix', not {condition.match_type!r}")
    path = tuple(condition.path)
    if not path:
        return None
    # Before anything reads the labels: each costs its length here and in the database.
    shortest = (
        len(path)
        - 1
        + sum(len(label) if isinstance(label, str) and label != "*" else 1 for label in path)
    )
    if shortest > NAMESPACE_MAX_LENGTH:
        raise InvalidNamespaceError(
            f"The {condition.match_type} condition {tuple(str(x)[:20] for x in path[:3])}... "
            f"matches namespaces of at least {shortest} characters joined; the store keeps "
            f"namespaces of at most {NAMESPACE_MAX_LENGTH}, so none can match. Use the "
            "labels the namespaces were stored with."
        )
    for label in path:
        if not isinstance(label, str) or SEPARATOR in label:
            raise InvalidNamespaceError(
                f"Invalid label {str(label)[:40]!r} in match condition {path[:3]}"
            )
    body = SEPARATOR.join(_ANY if label == "*" else _escaped(label) for label in path)
    if condition.match_type == "prefix":
        return "^" + body + "(" + SEPARATOR + "|" + end + ")"
    return "(^|" + SEPARATOR + ")" + body + end


def check_conditions(conditions: Sequence[MatchCondition]) -> tuple[MatchCondition, ...]:
    """The match conditions of a ``list_namespaces``, each checked (:func:`match_pattern`)
    before any query.

    Raises:
        StoreRequestError: More than :data:`MAX_CONDITIONS`.
        InvalidNamespaceError: A condition :func:`match_pattern` refuses.
    """
    conditions = tuple(conditions)
    if len(conditions) > MAX_CONDITIONS:
        raise StoreRequestError(
            f"list_namespaces was given {len(conditions):,} match conditions; the store "
            f"takes at most {MAX_CONDITIONS} in one ListNamespacesOp (each is a condition of "
            "one SQL statement). Merge them, or list with fewer at a time and intersect the "
            "results."
        )
    for condition in conditions:
        match_pattern(condition)
    return conditions
