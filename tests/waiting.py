"""Waiting in the tests for something to happen, never for a length of time.

A test that sleeps and then asserts bets on the machine's speed: on a busy machine the
thing it waited for has not happened yet, or has already finished. These wait for the
condition itself, checking it often, for :data:`PATIENCE` seconds at most (a bound
for a hung test, not a speed the machine must have).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

__all__ = ["PATIENCE", "until", "until_async"]

#: The longest wait for a condition, in seconds: far beyond what any takes here.
PATIENCE = 120.0


def until(check: Callable[[], object], what: str, timeout: float = PATIENCE) -> None:
    """Return once ``check()`` is true, checked every 10 ms.

    Raises:
        AssertionError: Still false after ``timeout`` seconds (``what`` says what for).
    """
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"waited {timeout:g} s for {what}"
        time.sleep(0.01)


async def until_async(check: Callable[[], object], what: str, timeout: float = PATIENCE) -> None:
    """:func:`until` in a coroutine: the event loop runs its other tasks meanwhile."""
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"waited {timeout:g} s for {what}"
        await asyncio.sleep(0.01)
