"""A store batch checked and planned, before its embeddings are computed
(:meth:`.store.SQLAlchemyStore._prepare` makes one), and the batch of a round of
concurrent one-operation calls (:meth:`Prepared.joined`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langgraph.store.base import PutOp

from langgraph.store.sqlalchemy._shapes import Batch

__all__ = ["Prepared"]


class Prepared:
    """A batch checked, before embedding: its reads planned, the last put of each key
    checked, the texts and queries to embed.

    Args:
        count: The number of operations.
        now: The batch's clock, seconds since the epoch.
    """

    def __init__(self, count: int, now: float) -> None:
        self.count = count
        self.batch = Batch(now=now)
        self.texts: list[tuple[int, str, str]] = []  # (put index, field, text)
        self.queries: set[str] = set()  # the search queries to embed
        # The last put of each key, checked: (stored namespace, op, canonical value or
        # None for a delete, TTL in minutes or None).
        self.puts: list[tuple[str, PutOp, dict[str, Any] | None, float | None]] = []

    @classmethod
    def joined(cls, parts: Sequence[Prepared], now: float) -> Prepared:
        """One batch of one-operation batches, checked already (a round of concurrent
        calls): operation ``i`` is ``parts[i]``'s; the last put of each key wins."""
        out = cls(len(parts), now)
        out.batch.count = len(parts)
        last: dict[tuple[str, str], int] = {}
        for i, part in enumerate(parts):
            assert part.count == 1
            out.batch.reads.extend((i, plan) for _, plan in part.batch.reads)
            out.queries.update(part.queries)
            for ns, op, _, _ in part.puts:
                last[(ns, op.key)] = i
        for i in last.values():
            part = parts[i]
            n = len(out.puts)
            out.puts.extend(part.puts)
            out.texts.extend((n, name, text) for _, name, text in part.texts)
        return out
