"""Arguments checked as the saver's methods take them: ids as text the databases can
store, counts, and the page of ``list_threads``.

Pure Python (the typed errors, the schema's limits, :func:`._ops.threads.id_at`): the
codec (:mod:`._codec.rows`) checks configs with these, and the command line's ``threads
list`` checks its page with them without importing LangGraph (:func:`._ops.browse.threads_plan`).
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta, timezone
from typing import Any, cast

from langgraph.checkpoint.sqlalchemy._ops import threads as _maintenance
from langgraph.checkpoint.sqlalchemy.errors import CheckpointConfigError
from langgraph.checkpoint.sqlalchemy.schema import THREAD_ID_MAX_LENGTH, utf8_encodable

__all__ = ["MAX_COUNT", "check_count", "check_text", "text_id", "thread", "thread_page"]


def text_id(value: Any, name: str, limit: int, *, required: bool) -> str | None:
    """``config['configurable'][name]`` as text, checked: a string (or int/UUID) of at
    most ``limit`` characters that databases can store; None when empty and optional.

    Raises:
        CheckpointConfigError: Missing though required, of another type, too long, or
            holding a NUL or a lone surrogate.
    """
    if value is None or value == "":
        if required:
            raise CheckpointConfigError(
                f"config['configurable']['{name}'] is required: pass "
                f"{{'configurable': {{'{name}': ...}}}} when you invoke the graph."
            )
        return None
    if isinstance(value, bool) or not isinstance(value, (str, int, uuid.UUID)):
        raise CheckpointConfigError(
            f"config['configurable']['{name}'] must be a string (or int/UUID), got "
            f"{type(value).__name__}."
        )
    text = check_text(str(value), name)
    if len(text) > limit:
        raise CheckpointConfigError(
            f"config['configurable']['{name}'] is {len(text)} characters long; the limit "
            f"is {limit}. Use a shorter id (for example a hash of it)."
        )
    return text


def check_text(text: str, name: str) -> str:
    """``text`` if databases can store it: no NUL, no lone surrogate.

    Raises:
        CheckpointConfigError: It holds either.
    """
    if "\x00" in text:
        raise CheckpointConfigError(
            f"config['configurable']['{name}'] contains a NUL character, which databases "
            "cannot store in text columns; remove it."
        )
    if not utf8_encodable(text):
        raise CheckpointConfigError(
            f"config['configurable']['{name}'] is not valid Unicode (it holds a lone "
            "surrogate); pass a proper string."
        )
    return text


def thread(value: Any) -> str:
    """A ``thread_id`` argument, checked as in a config."""
    return cast(str, text_id(value, "thread_id", THREAD_ID_MAX_LENGTH, required=True))


#: The largest count a database takes as a LIMIT or OFFSET (a signed 64-bit integer).
MAX_COUNT = 2**63 - 1


def check_count(name: str, value: object, *, none: bool) -> None:
    """Check a ``limit`` or ``offset`` argument: an int from 0 to :data:`MAX_COUNT` (or
    None when ``none``).

    Raises:
        ValueError: Not an int, negative, or over :data:`MAX_COUNT` (a database would
            answer with a raw overflow error).
    """
    if value is None and none:
        return
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_COUNT:
        allowed = "None or an int" if none else "an int"
        raise ValueError(f"{name} must be {allowed} from 0 to 2**63 - 1, got {value!r}")


def thread_page(
    limit: int | None, offset: int, idle_for: timedelta | None
) -> tuple[int | None, int, str | None]:
    """``(limit, offset, newest id allowed)`` of ``list_threads``, checked.

    Raises:
        ValueError: ``limit`` or ``offset`` not an int from 0 to 2**63 - 1.
    """
    check_count("limit", limit, none=True)
    check_count("offset", offset, none=False)
    cutoff = None
    if idle_for is not None:
        try:
            since = datetime.now(timezone.utc) - idle_for
        except OverflowError:  # idle for longer than datetime reaches: no thread is
            since = datetime.min.replace(tzinfo=timezone.utc)
        cutoff = _maintenance.id_at(since)
    return limit, offset, cutoff
