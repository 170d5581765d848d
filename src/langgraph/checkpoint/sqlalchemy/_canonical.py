"""The one JSON form of metadata and metadata filters, the same on every dialect.

:func:`canonical_json` checks a value and returns the copy that is stored or compared;
the metadata filters of the query builders (:mod:`.dialects`) and the saver's ``put``
both go through it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

__all__ = ["canonical_json", "json_string", "json_text"]


def canonical_json(value: Any) -> Any:
    """Check that ``value`` is JSON and return the copy that is stored or compared.

    The rules applied to metadata and metadata filters on every dialect: NUL characters
    are removed from every string, keys included (LangGraph already strips them from
    top-level strings; PostgreSQL's JSONB cannot hold them at all); integers must fit in
    a signed 64 bits; strings must be valid Unicode (no lone surrogates). Tuples become
    lists.

    Raises:
        TypeError: A key is not a string, or a value is not JSON (str, int, float, bool,
            None, list, tuple, dict).
        ValueError: A float is NaN or infinite, an integer needs more than 64 bits, or a
            string holds a lone surrogate.
    """
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise TypeError(f"JSON object keys must be strings, got {type(k).__name__}")
            out[json_string(k)] = canonical_json(v)
        return out
    if isinstance(value, (list, tuple)):
        return [canonical_json(v) for v in value]
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


def json_text(value: Any) -> str:
    """``value`` made canonical (:func:`canonical_json`) and written as JSON text.

    Raises:
        TypeError: As :func:`canonical_json`.
        ValueError: As :func:`canonical_json`.
    """
    return json.dumps(canonical_json(value), allow_nan=False)
