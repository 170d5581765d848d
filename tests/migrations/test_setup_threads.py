"""``setup()`` / ``asetup()`` from several threads of one process at once: Alembic keeps
its migration context in module globals, so two threads migrating together failed with
``KeyError: 'config'`` or "No context has been configured yet" on PostgreSQL and MariaDB
(on a fresh database and on one already at head alike)."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
from sqlalchemy import create_engine

from langgraph.checkpoint.sqlalchemy import SQLAlchemySaver, migrate

from ..provision import new_saver_args

THREADS = 6


@pytest.mark.parametrize("state", ["fresh", "at-head"])
def test_setup_from_many_threads_at_once(
    backend: str, request: pytest.FixtureRequest, tmp_path: Any, state: str
) -> None:
    if backend == "sqlite-memory":
        pytest.skip("an in-memory database lives in one saver's engines")
    args = new_saver_args(backend, request, tmp_path)
    if state == "at-head":
        with SQLAlchemySaver.from_conn_string(**args) as first:
            first.setup()
    errors: list[BaseException] = []
    start = threading.Barrier(THREADS)

    def one(i: int) -> None:
        saver = SQLAlchemySaver.from_conn_string(**args)
        try:
            start.wait()
            if i % 2:
                asyncio.run(saver.asetup())  # each thread its own event loop
            else:
                saver.setup()
        except BaseException as e:  # collected and asserted below
            errors.append(e)
        finally:
            saver.close()

    threads = [threading.Thread(target=one, args=(i,)) for i in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert [repr(e) for e in errors] == []
    with SQLAlchemySaver.from_conn_string(**args) as saver:
        engine = create_engine(saver.engine.url)
        with engine.connect() as conn:
            assert migrate.current_revision(conn, schema=args.get("schema")) == (
                migrate.head_revision()
            )
        engine.dispose()
