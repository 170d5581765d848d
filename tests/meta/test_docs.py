"""The API reference keeps up with the code: every public error and saver option is on it."""

from __future__ import annotations

import inspect
from pathlib import Path

import langgraph.checkpoint.sqlalchemy as package
from langgraph.checkpoint.sqlalchemy import SQLAlchemySaver

REFERENCE = Path(__file__).parents[2] / "docs" / "reference.md"


def test_every_public_error_is_rendered_in_the_reference() -> None:
    text = REFERENCE.read_text()
    errors = [
        name
        for name in package.__all__
        if isinstance(getattr(package, name), type)
        and issubclass(getattr(package, name), BaseException)
    ]
    assert errors
    missing = [n for n in errors if f"::: langgraph.checkpoint.sqlalchemy.{n}" not in text]
    assert missing == []


def test_every_saver_option_is_in_the_reference_summary() -> None:
    text = REFERENCE.read_text()
    params = inspect.signature(SQLAlchemySaver.from_conn_string).parameters
    assert next(iter(params)) == "conn_string"  # one name everywhere, as LangGraph's savers
    for name in params:
        if name != "engine_kwargs":
            assert f"{name}" in text, name
    assert "from_conn_string(conn_string," in text
    for method in ("lock_thread", "alock_thread", "detect_conflicts", "strict_decode"):
        assert method in text
