"""The progress bar of the CLI's long commands (``prune``, ``export``, ``import``,
``copy``, ``store copy``, ``reindex-metadata``): one function, :func:`progress_bar`, so
that every command shows it alike and keeps quiet alike.

A bar counts real units (threads, checkpoints, items) through the ``progress`` callback
of the library call the command runs; it is shown on stderr only when stderr is a
terminal, and never with ``--json`` or ``--no-progress`` (:func:`shows_progress`).
``rich`` is imported only for a bar shown.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

__all__ = ["progress_bar", "shows_progress"]


def shows_progress(args: argparse.Namespace) -> bool:
    """Whether a command shows a progress bar: not with ``--no-progress`` or ``--json``,
    nor when stderr is not a terminal."""
    quiet = getattr(args, "no_progress", False) or getattr(args, "json", False)
    return not quiet and sys.stderr.isatty()


@contextmanager
def progress_bar(
    args: argparse.Namespace, what: str, unit: str, total: int | Callable[[], int]
) -> Iterator[Callable[[int], None] | None]:
    """The progress bar of every command that shows one, on stderr when
    :func:`shows_progress`: ``what`` (``pruning``), then how many ``unit`` (``threads``)
    are done of ``total`` (a number, or a function called only when the bar is shown).

    Yields:
        The callback that sets how many are done (the ``progress`` argument of the
        library's calls), or None when no bar is shown. ``rich`` is imported only for a
        bar shown.
    """
    if not shows_progress(args):
        yield None
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
    )

    of = total if isinstance(total, int) else total()
    with Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn(unit),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        transient=True,
    ) as bar:
        task = bar.add_task(what, total=of)
        yield lambda done: bar.update(task, completed=done)
