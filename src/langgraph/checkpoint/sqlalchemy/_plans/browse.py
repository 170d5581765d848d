"""The plan of ``list_threads``: its arguments checked, then one read of
:func:`._ops.browse.list_threads`.

A plan of its own, apart from :mod:`._plans.methods`, because the command line's ``threads
list`` runs it without a saver, on a :class:`~._engine.doors.SyncRunner` of its own (the
same door, without LangGraph: see :func:`.cli.common.open_runner`).
"""

from __future__ import annotations

from datetime import timedelta

from langgraph.checkpoint.sqlalchemy._codec.configs import thread, thread_page
from langgraph.checkpoint.sqlalchemy._codec.threadinfo import ThreadInfo
from langgraph.checkpoint.sqlalchemy._engine.doors import Access, Plan
from langgraph.checkpoint.sqlalchemy._ops.browse import Cursor, list_threads
from langgraph.checkpoint.sqlalchemy._ops.checkpoints import Statements
from langgraph.checkpoint.sqlalchemy.errors import CheckpointConfigError

__all__ = ["cursor", "threads_plan"]


def cursor(after: object) -> Cursor | str | None:
    """The ``after`` argument of ``list_threads``, checked.

    Args:
        after: None, a :class:`ThreadInfo` of the previous page (its last), a
            ``(last_checkpoint_id, thread_id)`` pair, or a thread id (its newest
            checkpoint is looked up when the page is read).

    Returns:
        None, the pair, or the thread id.

    Raises:
        TypeError: ``after`` is none of these.
        CheckpointConfigError: ``after`` is an empty thread id.
    """
    if after is None:
        return None
    if isinstance(after, ThreadInfo):
        return (after.last_checkpoint_id, after.thread_id)
    if isinstance(after, str):
        if not after:
            raise CheckpointConfigError(
                "list_threads: after is an empty thread id; pass the last thread id (or "
                "ThreadInfo) of the previous page"
            )
        return after
    if isinstance(after, tuple) and len(after) == 2 and all(isinstance(x, str) for x in after):
        return (after[0], after[1])
    raise TypeError(
        "after must be a ThreadInfo, a (last_checkpoint_id, thread_id) pair or a thread id, "
        f"got {after!r}"
    )


def threads_plan(
    st: Statements, limit: int | None, offset: int, idle_for: timedelta | None, after: object
) -> Plan[list[ThreadInfo]]:
    """The plan of ``list_threads``: its arguments checked, then one read of
    :func:`list_threads`.

    The saver's ``list_threads`` runs it, and so does the command line's ``threads
    list`` (see the module docstring).

    Args:
        st: The statements of the database's dialect.
        limit: Page size (None: all).
        offset: Threads skipped.
        idle_for: Only threads idle this long, or None.
        after: The previous page's last thread (see :func:`cursor`).

    Raises:
        ValueError: ``limit`` or ``offset`` not an int from 0 to 2**63 - 1.
        TypeError: ``after`` of another type.
        CheckpointConfigError: ``after`` an empty or unstorable thread id.
    """
    page = thread_page(limit, offset, idle_for)
    checked = cursor(after)
    if isinstance(checked, str):
        checked = thread(checked)
    threads: list[ThreadInfo] = yield Access.READ, list_threads, (st, *page, checked)
    return threads
