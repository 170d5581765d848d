"""The saver never draws from the application's ``uuid.uuid4()`` stream.

Test suites make ``uuid4`` deterministic (LangGraph's own does) and expect the ids their
graphs draw to be the ones they planned; a lease owner, an in-memory database's name or a
lock token taken from that stream would shift every later id by one. ``setup()`` (the
MySQL/MariaDB migration lease), ``lock_thread``/``alock_thread`` and a ``:memory:`` saver's
construction take their randomness from the operating system instead.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest

from langgraph.checkpoint.sqlalchemy import SQLAlchemySaver


@contextmanager
def counting_uuid4(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[uuid.UUID]]:
    """Every ``uuid.uuid4()`` drawn inside the block."""
    calls: list[uuid.UUID] = []
    real = uuid.uuid4

    def counting() -> uuid.UUID:
        value = real()
        calls.append(value)
        return value

    with monkeypatch.context() as patch:
        patch.setattr(uuid, "uuid4", counting)
        yield calls


async def test_setup_and_thread_locks_draw_no_uuid4(
    backend: str,
    mode: str,
    fresh_databases: Callable[..., str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A first setup() of an empty database (MySQL/MariaDB: the migration lease), a
    second one, and a thread lock taken and released."""
    url = fresh_databases(backend)  # provisioning draws ids of its own: before counting
    with counting_uuid4(monkeypatch) as calls:
        saver = SQLAlchemySaver.from_conn_string(url)
        try:
            if mode == "async":
                await saver.asetup()
                await saver.asetup()
                async with saver.alock_thread("t-uuid", timeout=5):
                    pass
            else:
                saver.setup()
                saver.setup()
                with saver.lock_thread("t-uuid", timeout=5):
                    pass
        finally:
            await saver.aclose()
    assert calls == []


def test_an_in_memory_saver_draws_no_uuid4(monkeypatch: pytest.MonkeyPatch) -> None:
    with counting_uuid4(monkeypatch) as calls, SQLAlchemySaver.from_conn_string(":memory:") as s:
        s.setup()
    assert calls == []
