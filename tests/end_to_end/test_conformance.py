"""The official conformance suite (langgraph-checkpoint-conformance) on every backend,
through the async methods and, via an adapter, through the sync methods: all eight
capabilities (five base, three extended) detected and passing."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.capabilities import ALL_CAPABILITIES

from ..doors import SyncMethodsAdapter


async def test_conformance(saver_factory: Any, mode: str) -> None:
    @checkpointer_test(name=f"SQLAlchemySaver-{mode}")
    async def factory() -> AsyncIterator[Any]:
        saver = saver_factory()
        yield saver if mode == "async" else SyncMethodsAdapter(saver)

    report = await validate(factory)
    failures = {cap: result.failures for cap, result in report.results.items() if result.failures}
    assert report.passed_all_base(), failures
    outcome = {cap: (r.detected, r.passed) for cap, r in report.results.items()}
    assert outcome == {cap.value: (True, True) for cap in ALL_CAPABILITIES}, failures
