"""``setup()`` / ``asetup()`` on a fresh database print nothing: no driver warning (MariaDB
answered the named primary keys with warning 1280, "Name ... ignored for PRIMARY key",
which asyncmy logged four times), no log record, no Python warning."""

from __future__ import annotations

import logging
import warnings
from typing import Any

import pytest
from sqlalchemy import event

from langgraph.checkpoint.sqlalchemy import SQLAlchemySaver

from ..provision import new_saver_args


async def test_setup_is_quiet(
    backend: str,
    mode: str,
    request: pytest.FixtureRequest,
    tmp_path: Any,
    caplog: pytest.LogCaptureFixture,
) -> None:
    saver = SQLAlchemySaver.from_conn_string(**new_saver_args(backend, request, tmp_path))
    try:
        with warnings.catch_warnings(record=True) as caught, caplog.at_level(logging.WARNING):
            warnings.simplefilter("always")
            if mode == "async":
                await saver.asetup()
            else:
                saver.setup()
        noisy = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
        assert noisy == []
        assert [str(w.message) for w in caught] == []
    finally:
        await saver.aclose()


def test_setup_of_an_up_to_date_database_is_one_query(
    backend: str, request: pytest.FixtureRequest, tmp_path: Any
) -> None:
    """A short-lived saver on an existing database pays one version query in setup():
    no Alembic environment, no table check, no migration lock; and, where the dialect
    keeps metadata index rows (not PostgreSQL), one of the keys they cover, which the
    saver then indexes too (``Codec.index_also``)."""
    args = new_saver_args(backend, request, tmp_path)
    first = SQLAlchemySaver.from_conn_string(**args)
    first.setup()
    statements: list[str] = []

    def seen(conn: Any, cursor: Any, statement: str, *rest: Any) -> None:
        if statement.split(None, 1)[0].upper() not in ("BEGIN", "COMMIT", "ROLLBACK"):
            statements.append(statement)

    saver = first if backend == "sqlite-memory" else SQLAlchemySaver.from_conn_string(**args)
    event.listen(saver.engine, "before_cursor_execute", seen)
    try:
        saver.setup()
    finally:
        event.remove(saver.engine, "before_cursor_execute", seen)
        saver.close()
        first.close()
    keys = ["lgsa_metadata_keys"] if saver._qb.metadata_index_rows else []
    assert len(statements) == 1 + len(keys), statements
    assert "lgsa_alembic_version" in statements[0]
    assert [k for k in keys if k in statements[-1]] == keys, statements
