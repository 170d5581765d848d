"""Rows read on the DBAPI cursor (:mod:`.cursor`), through their columns' result
processors: what ``Connection.execute``'s result would hand back, without its per-row
machinery. Only the columns that have a processor are touched, and a text value a
processor would return unchanged is left as it is."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["Processors", "processed"]

Processors = tuple[tuple[int, Callable[[Any], Any], bool], ...]
"""``(column index, result processor, a str is read unchanged)`` of each processed column."""


def processed(
    raw: Sequence[Any],
    processors: Processors,
    make: Callable[[Any], Any],
    first_only: int = 0,
    plain: bool = False,
    repeated: int = 0,
) -> list[Any]:
    """``raw`` rows with their values processed.

    Args:
        raw: The driver's rows.
        processors: The columns to process (see :data:`Processors`).
        make: Makes a row of its values (a named tuple's ``_make``).
        first_only: The columns before this index are processed in the first row only.
        plain: The rows as lists of values, not made by ``make``.
        repeated: The columns before this index take few distinct values: each distinct
            tuple of them is processed once (:func:`_memoized`).
    """
    if repeated:
        return _memoized(raw, processors, repeated, make, plain)
    out = []
    for r in raw:
        values = list(r)
        for i, p, str_unchanged in processors:
            v = values[i]
            if not (str_unchanged and type(v) is str):
                values[i] = p(v)
        out.append(values if plain else make(values))
        if first_only:
            processors = tuple(x for x in processors if x[0] >= first_only)
            first_only = 0
    return out


def _memoized(
    raw: Sequence[Any],
    processors: Processors,
    repeated: int,
    make: Any,
    plain: bool,
) -> list[Any]:
    """:func:`processed` for ``raw`` rows whose first ``repeated`` columns
    take few distinct values: each distinct tuple of them processed once."""
    keyed = tuple(p for p in processors if p[0] < repeated)
    rest = tuple(p for p in processors if p[0] >= repeated)
    seen: dict[tuple[Any, ...], list[Any]] = {}
    out = []
    for r in raw:
        head = tuple(r[:repeated])
        done = seen.get(head)
        if done is None:
            done = list(head)
            for i, p, str_unchanged in keyed:
                v = done[i]
                if not (str_unchanged and type(v) is str):
                    done[i] = p(v)
            seen[head] = done
        values = done + list(r[repeated:])
        for i, p, str_unchanged in rest:
            v = values[i]
            if not (str_unchanged and type(v) is str):
                values[i] = p(v)
        out.append(values if plain else make(values))
    return out
