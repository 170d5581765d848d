"""``lock_thread``'s lease while the block runs: renewed, given up when taken over, dropped.

On a database server the lock is a lease row of ``lgsa_locks`` that a daemon thread
(``lock_thread``) or a task (``alock_thread``) renews every ``RENEW_EVERY`` seconds. Here
the renewal runs every few hundredths of a second, and the tests read the row: its
expiry moves forward while the block runs; a lease taken over by another owner is not
renewed any more (an error is logged) and is left to its new owner at release; the row is
gone after the block. SQLite keeps a lock of its own (no row, nothing to renew).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

import pytest
from sqlalchemy import Connection, delete, select, update

from langgraph.checkpoint.sqlalchemy._plans import locks as _plan_locks
from langgraph.checkpoint.sqlalchemy.schema import locks

from ..doors import Door
from ..waiting import until, until_async

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _in_schema(door: Door, conn: Connection) -> Connection:
    return conn.execution_options(schema_translate_map={None: door.saver.schema})


def _rows(door: Door) -> list[tuple[str, float]]:
    with door.saver.engine.connect() as conn:
        found = _in_schema(door, conn).execute(select(locks.c.owner, locks.c.expires_at))
        return [(str(owner), float(expires)) for owner, expires in found]


async def _hold(door: Door, during: Callable[[], None], done: Callable[[], bool]) -> None:
    """Hold the lock of thread ``t``: call ``during()``, then wait until ``done()``."""
    if door.is_async:
        async with door.saver.alock_thread("t", timeout=5):
            during()
            await until_async(done, "the renewal to see the lease taken over")
    else:
        with door.saver.lock_thread("t", timeout=5):
            during()
            until(done, "the renewal to see the lease taken over")


@pytest.fixture
def fast_renewal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_plan_locks, "RENEW_EVERY", 0.05)


@pytest.mark.usefixtures("fast_renewal")
async def test_the_lease_is_renewed_while_the_block_runs_and_dropped_after(door: Door) -> None:
    if not door.saver._qb.thread_lock_lease:
        pytest.skip("SQLite keeps a lock of its own, not a lease row")
    seen: list[list[tuple[str, float]]] = []

    def extended() -> bool:  # past a second at most: the server clock may count in seconds
        seen.append(_rows(door))
        return seen[-1][0][1] > seen[0][0][1]

    if door.is_async:
        async with door.saver.alock_thread("t", timeout=5):
            seen.append(await asyncio.to_thread(_rows, door))
            await until_async(extended, "the held lease to be extended")
    else:
        with door.saver.lock_thread("t", timeout=5):
            seen.append(_rows(door))
            until(extended, "the held lease to be extended")
    (first,), (later,) = seen[0], seen[-1]
    assert first[0] == later[0]  # the same holder
    assert later[1] > first[1]  # its lease was extended
    assert _rows(door) == []


@pytest.mark.usefixtures("fast_renewal")
async def test_a_lease_taken_over_is_not_renewed_nor_dropped(
    door: Door, caplog: pytest.LogCaptureFixture
) -> None:
    if not door.saver._qb.thread_lock_lease:
        pytest.skip("SQLite keeps a lock of its own, not a lease row")

    def take_over() -> None:
        with door.saver.engine.begin() as conn:
            _in_schema(door, conn).execute(update(locks).values(owner="someone else"))

    def seen() -> bool:
        return any("taken over" in r.getMessage() for r in caplog.records)

    with caplog.at_level(logging.ERROR, logger=_plan_locks.__name__):
        await _hold(door, during=take_over, done=seen)
    assert seen()
    # the new owner's row stays: the release drops only its own holder's lease
    assert [owner for owner, _ in _rows(door)] == ["someone else"]
    with door.saver.engine.begin() as conn:
        _in_schema(door, conn).execute(delete(locks))
