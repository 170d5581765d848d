"""The dialect suite, locks: ``lock_thread`` (the lease rows of ``lgsa_locks``, or the
family's own ``try_thread_lock``), ``detect_conflicts`` (``write_lock``) and setup from
several threads at once (``migration_lock``), through the public saver, on every backend
of the suite (``extra`` too).

Duties of :class:`~langgraph.checkpoint.sqlalchemy.dialects.QueryBuilder` exercised:
``take_lease``, ``renew_lease``, ``drop_lease``, ``clock``, ``try_thread_lock``/
``release_thread_lock``, ``write_lock``, ``migration_lock``, ``ensure_schema`` and
``ensure_version_table``.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from langgraph.checkpoint.base import empty_checkpoint
from sqlalchemy import inspect, select

from langgraph.checkpoint.sqlalchemy import (
    CheckpointConflictError,
    SQLAlchemySaver,
    ThreadLockTimeout,
)
from langgraph.checkpoint.sqlalchemy._plans import locks as lease_module
from langgraph.checkpoint.sqlalchemy.schema import locks

from ..checkpoints import config, next_checkpoint
from ..doors import Door
from ..provision import new_saver_args
from ..security.test_forged import raw
from ..waiting import until


async def test_a_thread_lock_excludes_a_second_holder_until_released(
    saver_factory: Any, mode: str
) -> None:
    first, second = saver_factory(), saver_factory(shared=True)
    if mode == "sync":
        with first.lock_thread("t"):
            with pytest.raises(ThreadLockTimeout), second.lock_thread("t", timeout=0.3):
                pass
            with second.lock_thread("u", timeout=5):
                pass
        with second.lock_thread("t", timeout=5):
            pass
    else:
        async with first.alock_thread("t"):
            with pytest.raises(ThreadLockTimeout):
                async with second.alock_thread("t", timeout=0.3):
                    pass
            async with second.alock_thread("u", timeout=5):
                pass
        async with second.alock_thread("t", timeout=5):
            pass


def test_a_held_lease_is_renewed_on_the_server_clock(
    saver: SQLAlchemySaver, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not saver._qb.thread_lock_lease:
        pytest.skip("this family locks threads with its own lock, not lease rows")
    monkeypatch.setattr(lease_module, "RENEW_EVERY", 0.2)

    def expiry() -> float:
        with raw(saver) as conn:
            return float(conn.execute(select(locks.c.expires_at)).scalar_one())

    with saver.lock_thread("t"):
        taken = expiry()
        # renewed every 0.2 s; past a second at most if the server clock counts in seconds
        until(lambda: expiry() > taken, "the held lease to be renewed")
    with raw(saver) as conn:
        assert conn.execute(select(locks.c.name)).all() == []  # dropped on release


async def test_a_put_whose_parent_is_no_longer_the_latest_is_refused(
    saver_factory: Any, mode: str
) -> None:
    one = Door(saver_factory(detect_conflicts=True), mode)
    two = Door(saver_factory(shared=True, detect_conflicts=True), mode)
    root, versions = next_checkpoint(one.saver, None, {"n": 0})
    parent = await one.put(config("t", ns=""), root, {"source": "input", "step": -1}, versions)
    winner, versions = next_checkpoint(one.saver, root, {"n": 1}, 0)
    await one.put(parent, winner, {"source": "loop", "step": 0}, versions)
    loser, versions = next_checkpoint(two.saver, root, {"n": 2}, 0)
    with pytest.raises(CheckpointConflictError):
        await two.put(parent, loser, {"source": "loop", "step": 0}, versions)
    latest = await two.get_tuple(config("t"))
    assert latest.checkpoint["id"] == winner["id"]


def test_setup_from_several_threads_at_once_on_a_new_schema(
    backend: str, request: pytest.FixtureRequest, tmp_path: Any
) -> None:
    if backend == "sqlite-memory":
        pytest.skip("an in-memory database is one saver's own")
    args = new_saver_args(backend, request, tmp_path)
    savers = [SQLAlchemySaver.from_conn_string(**args) for _ in range(4)]
    try:
        with ThreadPoolExecutor(4) as pool:
            list(pool.map(lambda s: s.setup(), savers))
        savers[0].setup()  # at head: nothing to do
        stored = savers[1].put(config("t", ns=""), empty_checkpoint(), {}, {})
        assert savers[2].get_tuple(stored) is not None
        names = inspect(savers[3].engine).get_table_names(schema=args.get("schema"))
        assert {"lgsa_checkpoints", "lgsa_checkpoint_blobs", "lgsa_checkpoint_writes"} <= set(names)
    finally:
        for s in savers:
            s.close()
