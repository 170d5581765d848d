"""Concurrent store batches never deadlock on each other.

A batch takes the row locks of its items in one key order, deletes and upserts
interleaved: ``[delete k5, put k0..k4]`` and ``[put k0..k5]`` racing each other used to
lock in opposite orders (deletes first), and PostgreSQL and MariaDB broke 4 to 6 of 50
races as deadlocks. Every transient failure the store's retry meets is recorded: a
deadlock that a retry hid would count too.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
from langgraph.store.base import PutOp
from sqlalchemy.exc import DBAPIError

from langgraph.checkpoint.sqlalchemy._engine import retry as _retry

NS = ("race",)
ROUNDS = 40


def _batches() -> tuple[list[PutOp], list[PutOp]]:
    deletes_last_key = [PutOp(NS, "k5", None), *(PutOp(NS, f"k{i}", {"v": i}) for i in range(5))]
    puts_all = [PutOp(NS, f"k{i}", {"v": -i}) for i in range(6)]
    return deletes_last_key, puts_all


async def test_batches_racing_on_the_same_keys_never_deadlock(
    store_factory: Any, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = store_factory()
    # A second store on the same tables: its own connections, as another process has.
    second = type(first)(first.engine, first.async_engine, schema=first.schema)
    batches = _batches()
    errors: list[BaseException] = []
    real_pause = _retry.Retry.pause

    def recording_pause(self: Any, error: BaseException) -> float:
        if isinstance(error, DBAPIError):
            errors.append(error)
        return real_pause(self, error)

    monkeypatch.setattr(_retry.Retry, "pause", recording_pause)
    barrier = threading.Barrier(2)

    def run(store: Any, batch: list[PutOp]) -> None:
        for _ in range(ROUNDS):
            barrier.wait()
            try:
                store.batch(batch)
            except BaseException as e:  # counted, not raised: the other thread goes on
                errors.append(e)

    if mode == "async":
        for _ in range(ROUNDS):
            done = await asyncio.gather(
                first.abatch(batches[0]), second.abatch(batches[1]), return_exceptions=True
            )
            errors.extend(e for e in done if isinstance(e, BaseException))
    else:
        threads = [
            threading.Thread(target=run, args=(store, batch))
            for store, batch in zip((first, second), batches, strict=True)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert errors == [], f"{len(errors)} of {ROUNDS} races failed: {errors[0]!r}"
    assert {item.key for item in first.search(NS, limit=10)} >= {f"k{i}" for i in range(5)}
