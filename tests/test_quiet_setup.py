"""``setup()`` / ``asetup()`` on a fresh database print nothing: no driver warning (MariaDB
answered the named primary keys with warning 1280, "Name ... ignored for PRIMARY key",
which asyncmy logged four times), no log record, no Python warning."""

from __future__ import annotations

import logging
import warnings
from typing import Any

import pytest

from langgraph.checkpoint.sqlalchemy import SQLAlchemySaver

from .provision import new_saver_args


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
