"""Checkpoint builders shared by the tests: configs, the next checkpoint of a chain, and
a small numbered chain stored through the sync methods.

Graph builders are in :mod:`tests.graphs`; databases come from :mod:`tests.provision`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langgraph.checkpoint.base import Checkpoint, create_checkpoint, empty_checkpoint


def config(thread_id: Any, checkpoint_id: Any = None, ns: Any = None) -> dict[str, Any]:
    """A config of ``thread_id``; ``checkpoint_id`` and ``checkpoint_ns`` are left out
    when their argument is None."""
    c: dict[str, Any] = {"thread_id": thread_id}
    if ns is not None:
        c["checkpoint_ns"] = ns
    if checkpoint_id is not None:
        c["checkpoint_id"] = checkpoint_id
    return {"configurable": c}


def next_checkpoint(
    saver: Any,
    prev: Checkpoint | None,
    updates: dict[str, Any],
    step: int = 0,
    *,
    keep_out: tuple[str, ...] = (),
) -> tuple[Checkpoint, dict[str, Any]]:
    """The checkpoint after ``prev`` with the channels in ``updates`` written.

    Args:
        saver: Gives the new channel versions (``get_next_version``).
        prev: The parent checkpoint; None for the first of a thread.
        updates: Channel values written in this step.
        step: The checkpoint's step.
        keep_out: Channels that get a new version but no stored value (as a
            DeltaChannel between snapshots).

    Returns:
        The checkpoint and its ``new_versions`` (the updated channels only).
    """
    base = prev if prev is not None else empty_checkpoint()
    values = dict(base["channel_values"])
    versions = dict(base["channel_versions"])
    new_versions: dict[str, Any] = {}
    for channel, value in updates.items():
        versions[channel] = new_versions[channel] = saver.get_next_version(
            versions.get(channel), None
        )
        values[channel] = value
    for channel in keep_out:
        values.pop(channel, None)
    checkpoint = create_checkpoint(
        {**base, "channel_values": values, "channel_versions": versions}, None, step
    )
    return checkpoint, new_versions


def put_numbered_chain(
    saver: Any, config: Any, steps: int, metadata: Callable[[int], dict[str, Any]]
) -> Any:
    """``steps`` checkpoints in a chain through the sync ``put``, channel ``n`` set to the
    step, ``metadata(step)`` as metadata; then the pending write ``("n", 99)`` of task
    ``task-1`` on the last one. Returns the last one's config."""
    checkpoint = empty_checkpoint()
    for step in range(steps):
        checkpoint = create_checkpoint(checkpoint, None, step)
        version = saver.get_next_version(None, None)
        checkpoint["channel_values"] = {"n": step}
        checkpoint["channel_versions"] = {"n": version}
        config = saver.put(config, checkpoint, metadata(step), {"n": version})
    saver.put_writes(config, [("n", 99)], "task-1")
    return config
