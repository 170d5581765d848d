"""Rows cut into runs by bytes, so that no multi-row statement outgrows what a server
takes in one packet (MySQL/MariaDB's ``max_allowed_packet``).

Pure Python, shared by the saver's writes (:mod:`._ops.checkpoints`) and the store's
(``langgraph.store.sqlalchemy._items``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeVar

__all__ = ["by_bytes"]

T = TypeVar("T")


def by_bytes(rows: Iterable[tuple[T, int]], budget: int) -> list[list[T]]:
    """The rows (each with its size in bytes) in runs of at most ``budget`` bytes each, in
    their order; a row larger than ``budget`` goes alone."""
    parts: list[list[T]] = []
    part: list[T] = []
    size = 0
    for row, n in rows:
        if part and size + n > budget:
            parts.append(part)
            part, size = [], 0
        part.append(row)
        size += n
    if part:
        parts.append(part)
    return parts
