"""CLI commands on stored threads: ``threads list|show|delete``, ``prune``,
``copy-thread``, ``stats``, and their parsers (:func:`add_commands`).

Each is a thin layer over the saver's public methods (``list_threads``, ``list``,
``get_tuple``, ``delete_thread``, ``prune``, ``copy_thread``, ``storage_stats``);
``threads list`` runs the plan of ``list_threads`` on the saver's door without building
the saver (:func:`.common.open_runner`), so that it starts without importing LangGraph.
"""

from __future__ import annotations

import argparse
import shlex
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from langgraph.checkpoint.sqlalchemy.cli.common import (
    NOT_FOUND,
    CommandError,
    add_command,
    add_group,
    as_json,
    cell,
    confirm,
    count,
    duration,
    emit,
    open_runner,
    open_saver,
    positive,
    read_from,
)
from langgraph.checkpoint.sqlalchemy.cli.progress import progress_bar
from langgraph.checkpoint.sqlalchemy.errors import ThreadNotEmptyError

if TYPE_CHECKING:
    from langgraph.checkpoint.base import CheckpointTuple

    from langgraph.checkpoint.sqlalchemy._codec.threadinfo import ThreadInfo


def _size(n: int) -> str:
    value = float(n)
    for unit in ("B", "kB", "MB", "GB"):
        if value < 1000 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1000
    return f"{n} B"  # pragma: no cover


def _table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    cells = [[str(c) for c in headers], *[[cell(c) for c in r] for r in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    for row in cells:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())


def _thread_json(t: ThreadInfo) -> dict[str, Any]:
    return {
        "thread_id": t.thread_id,
        "checkpoints": t.checkpoints,
        "namespaces": t.namespaces,
        "last_checkpoint_id": t.last_checkpoint_id,
        "last_activity": t.last_activity.isoformat() if t.last_activity else None,
        "bytes": t.bytes,
    }


# -- threads -------------------------------------------------------------------------------


def cmd_threads_list(args: argparse.Namespace) -> int:
    # The saver's list_threads plan, on its door without the saver (no LangGraph import).
    from langgraph.checkpoint.sqlalchemy._ops.checkpoints import statements_for
    from langgraph.checkpoint.sqlalchemy._plans.browse import threads_plan

    with open_runner(args) as runner:
        st = statements_for(runner.qb)
        plan = threads_plan(st, args.limit, args.offset, args.idle_for, args.after)
        threads = runner.drive(plan)
    database = read_from(args)

    def human() -> None:
        if not threads:
            print("no threads")
            return
        _table(
            ["THREAD", "CHECKPOINTS", "NAMESPACES", "SIZE", "LAST ACTIVITY (UTC)"],
            [
                (
                    t.thread_id,
                    t.checkpoints,
                    t.namespaces,
                    _size(t.bytes),
                    t.last_activity.strftime("%Y-%m-%d %H:%M:%S") if t.last_activity else "",
                )
                for t in threads
            ],
        )
        if len(threads) == args.limit:  # maybe more: the cursor of the next page
            print(f"next page: --after {shlex.quote(threads[-1].thread_id)}")

    emit(args, {"database": database, "threads": [_thread_json(t) for t in threads]}, human)
    return 0


def _tuple_json(t: CheckpointTuple, *, values: bool) -> dict[str, Any]:
    from langgraph.checkpoint.sqlalchemy._codec.opaque import shown
    from langgraph.checkpoint.sqlalchemy._codec.threadinfo import checkpoint_time

    c = t.config["configurable"]
    out: dict[str, Any] = {
        "checkpoint_ns": c["checkpoint_ns"],
        "checkpoint_id": c["checkpoint_id"],
        "parent_checkpoint_id": (
            t.parent_config["configurable"]["checkpoint_id"] if t.parent_config else None
        ),
        "created": (ts.isoformat() if (ts := checkpoint_time(c["checkpoint_id"])) else None),
        "metadata": t.metadata,
        "pending_writes": len(t.pending_writes or []),
    }
    if values:
        # Read as data (the CLI's saver never rebuilds objects): an object shows as its
        # stored type name and fields, see _opaque.shown.
        out["channel_values"] = shown(t.checkpoint.get("channel_values"))
        out["channel_versions"] = shown(t.checkpoint.get("channel_versions"))
        out["pending_writes"] = [
            {"task_id": task, "channel": ch, "value": shown(v)}
            for task, ch, v in t.pending_writes or []
        ]
    return out


def cmd_threads_show(args: argparse.Namespace) -> int:
    configurable: dict[str, Any] = {"thread_id": args.thread}
    if args.ns is not None:
        configurable["checkpoint_ns"] = args.ns
    with open_saver(args) as saver:
        if args.checkpoint:
            tup = saver.get_tuple(
                {
                    "configurable": {
                        **configurable,
                        "checkpoint_ns": args.ns or "",
                        "checkpoint_id": args.checkpoint,
                    }
                }
            )
            if tup is None:
                raise CommandError(
                    f"thread {args.thread!r} has no checkpoint {args.checkpoint!r} in namespace "
                    f"{args.ns or ''!r}",
                    1,
                )
            data = _tuple_json(tup, values=True)
            emit(args, data, lambda: print(_pretty(data)))
            return 0
        history = [
            _tuple_json(t, values=False)
            for t in saver.list({"configurable": configurable}, limit=args.limit)
        ]
    if not history:
        raise CommandError(
            f"thread {args.thread!r} has no checkpoints. List the threads with: "
            "langgraph-checkpoint-sqlalchemy threads list",
            1,
        )

    def human() -> None:
        _table(
            ["CHECKPOINT", "NS", "CREATED (UTC)", "SOURCE", "STEP", "WRITES", "PARENT"],
            [
                (
                    h["checkpoint_id"],
                    h["checkpoint_ns"],
                    (h["created"] or "")[:19].replace("T", " "),
                    h["metadata"].get("source"),
                    h["metadata"].get("step"),
                    h["pending_writes"],
                    h["parent_checkpoint_id"],
                )
                for h in history
            ],
        )

    emit(args, history, human)
    return 0


def _pretty(data: Any) -> str:
    return as_json(data)


def cmd_threads_delete(args: argparse.Namespace) -> int:
    with open_saver(args, threads=args.threads, what="nothing was deleted") as saver:
        confirm(args, f"Delete {len(args.threads)} thread(s) and all their checkpoints?")
        for thread_id in args.threads:
            saver.delete_thread(thread_id)
    emit(
        args,
        {"deleted": args.threads},
        lambda: print(f"deleted {len(args.threads)} thread(s)"),
    )
    return 0


# -- prune, copy-thread, stats ---------------------------------------------------------------


def cmd_prune(args: argparse.Namespace) -> int:
    if not args.threads and args.idle_for is None:
        raise CommandError("prune needs THREAD ids or --idle-for DURATION (or both)")
    with open_saver(args, threads=args.threads, what="nothing was pruned") as saver:
        if args.idle_for is not None:
            idle = {t.thread_id: t for t in saver.list_threads(limit=None, idle_for=args.idle_for)}
            targets = [t for t in args.threads if t in idle] if args.threads else list(idle)
            infos = [idle[t] for t in targets]
        else:
            known = {t.thread_id: t for t in saver.list_threads(limit=None)}
            targets = list(dict.fromkeys(args.threads))
            infos = [known[t] for t in targets if t in known]
        plan = {
            "strategy": args.strategy,
            "threads": [_thread_json(t) for t in infos],
            "dry_run": args.dry_run,
        }
        if args.dry_run or not infos:

            def human() -> None:
                what = (
                    "keep the newest checkpoint of each namespace (and the DeltaChannel "
                    "history it needs)"
                    if args.strategy == "keep_latest"
                    else "delete every checkpoint"
                )
                print(f"plan: {what} of {len(infos)} thread(s)")
                for t in infos:
                    print(f"  {cell(t.thread_id)}: {t.checkpoints} checkpoints, {_size(t.bytes)}")

            emit(args, plan, human)
            return 0
        confirm(args, f"Prune {len(infos)} thread(s) with strategy {args.strategy}?")
        with progress_bar(args, "pruning", "threads", len(infos)) as progress:
            saver.prune([t.thread_id for t in infos], strategy=args.strategy, progress=progress)
        after = {
            t.thread_id: t.checkpoints
            for t in saver.list_threads(limit=None)
            if t.thread_id in {i.thread_id for i in infos}
        }
    plan["checkpoints_after"] = after
    emit(
        args,
        plan,
        lambda: print(
            f"pruned {len(infos)} thread(s): "
            f"{sum(t.checkpoints for t in infos)} -> {sum(after.values())} checkpoints"
        ),
    )
    return 0


def cmd_copy_thread(args: argparse.Namespace) -> int:

    with open_saver(args, threads=[args.source], what="nothing was copied") as saver:
        try:
            saver.copy_thread(args.source, args.target)
        except ThreadNotEmptyError as e:
            raise CommandError(str(e), 1) from None
        copied = saver.storage_stats(args.target)
    emit(
        args,
        {"source": args.source, "target": args.target, "tables": copied},
        lambda: print(
            f"copied {args.source!r} to {args.target!r}: "
            f"{copied['lgsa_checkpoints']['rows']} checkpoints"
        ),
    )
    return 0


def cmd_stats(args: argparse.Namespace) -> int:
    only = [] if args.thread is None else [args.thread]
    with open_saver(args, threads=only, what="no statistics") as saver:
        tables = saver.storage_stats(args.thread, estimate=args.fast)
        threads = [] if args.thread else saver.list_threads(limit=args.top)
        database = read_from(args)
    estimated = args.fast and args.thread is None  # per-thread figures are always exact
    data: dict[str, Any] = {"database": database, "tables": tables, "estimated": estimated}
    if not args.thread:
        data["threads"] = [_thread_json(t) for t in threads]

    def human() -> None:
        if estimated:
            print("estimated from the database's statistics (storage size; exact: without --fast)")
        _table(
            ["TABLE", "~ROWS" if estimated else "ROWS", "~BYTES" if estimated else "BYTES"],
            [(name, t["rows"], _size(t["bytes"])) for name, t in tables.items()],
        )
        for name, t in tables.items():
            if t.get("value_bytes", t["bytes"]) != t["bytes"]:
                print(
                    f"{name}: {_size(t['value_bytes'])} of values stored in "
                    f"{_size(t['bytes'])} (growing values are stored as the bytes they add)"
                )
        if threads:
            print()
            print(f"newest {len(threads)} thread(s):")
            _table(
                ["THREAD", "CHECKPOINTS", "SIZE"],
                [(t.thread_id, t.checkpoints, _size(t.bytes)) for t in threads],
            )

    emit(args, data, human)
    return 0


def add_commands(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add the thread commands to ``sub`` (what ``ArgumentParser.add_subparsers``
    returned), each command with the global options of the parent parser ``common``."""
    tsub = add_group(
        sub,
        "threads",
        "list, show and delete threads",
        about="Browse the stored threads (list, show) and delete them (delete).",
        examples=["threads list", "threads show THREAD", "threads delete THREAD --yes"],
    )
    ls = add_command(
        tsub,
        common,
        "list",
        cmd_threads_list,
        "threads, newest activity first (no decoding)",
        about="""List the threads, newest activity first, with their checkpoint count,
        namespaces, size and last activity. Nothing is decoded: counts and sizes only. A
        full page ends with the cursor of the next page (--after THREAD). The database
        read is named on stderr (and as "database" with --json), its password hidden.""",
        examples=[
            "threads list",
            "threads list --limit 20 --after support-42",
            "threads list --idle-for 30d --json",
        ],
    )
    ls.add_argument("--limit", type=count, default=50, help="threads a page (default 50)")
    ls.add_argument(
        "--after",
        metavar="THREAD",
        help="the page after this thread (the last of the previous page; cheaper than --offset)",
    )
    ls.add_argument("--offset", type=count, default=0, help="threads skipped (slow when large)")
    ls.add_argument("--idle-for", type=duration, help="only threads idle this long (30d, 12h)")
    show = add_command(
        tsub,
        common,
        "show",
        cmd_threads_show,
        "a thread's checkpoint history",
        about="""Show a thread's checkpoints, newest first, with their metadata; with
        --checkpoint, that checkpoint's channel values and pending writes, read as data
        (a stored object shows as its type name and fields, never rebuilt).""",
        examples=["threads show support-42", "threads show support-42 --checkpoint ID --json"],
    )
    show.add_argument("thread", metavar="THREAD", help="the thread id")
    show.add_argument("--ns", help="only this checkpoint_ns ('' = the root graph)")
    show.add_argument("--limit", type=positive, default=20, help="newest checkpoints (default 20)")
    show.add_argument("--checkpoint", metavar="ID", help="decode and print this checkpoint's state")
    rm = add_command(
        tsub,
        common,
        "delete",
        cmd_threads_delete,
        "delete threads (asks first)",
        about="""Delete threads: every checkpoint, blob and pending write of each. Asks
        first, unless --yes; without a terminal, refuses unless --yes. An unknown thread
        stops it before anything is deleted.""",
        examples=["threads delete support-42", "threads delete t1 t2 --yes"],
        failed=f"{NOT_FOUND}; the confirmation refused",
    )
    rm.add_argument("threads", nargs="+", metavar="THREAD", help="the thread ids to delete")

    prune = add_command(
        sub,
        common,
        "prune",
        cmd_prune,
        "keep only the latest checkpoints, or delete threads",
        about="""Retention: keep only the newest checkpoint of each namespace (and what
        resuming it needs), or delete whole threads (--strategy delete), for the threads
        named, the threads idle for --idle-for, or the named ones that are idle. Each
        thread is pruned in its own transaction. Asks first unless --yes; --dry-run
        prints the plan only. A progress bar counts the threads on a terminal.""",
        examples=[
            "prune --idle-for 30d --dry-run",
            "--yes prune --idle-for 180d --strategy delete",
            "prune support-42 --yes",
        ],
        failed=f"{NOT_FOUND}; the confirmation refused",
        progress=True,
    )
    prune.add_argument(
        "threads", nargs="*", metavar="THREAD", help="threads to prune (with --idle-for: if idle)"
    )
    prune.add_argument("--idle-for", type=duration, help="threads idle this long (30d, 12h)")
    prune.add_argument(
        "--strategy",
        choices=["keep_latest", "delete"],
        default="keep_latest",
        help="keep_latest (default): the newest checkpoint of each namespace; delete: the "
        "whole thread",
    )
    prune.add_argument("--dry-run", action="store_true", help="print the plan, change nothing")

    copy = add_command(
        sub,
        common,
        "copy-thread",
        cmd_copy_thread,
        "copy a thread in the database",
        about="""Copy a thread within the database, every checkpoint (same ids and
        parents), blob and pending write, in one transaction. A target thread that has
        checkpoints is refused.""",
        examples=["copy-thread support-42 support-42-backup"],
        failed=f"{NOT_FOUND}; a target thread that has checkpoints",
    )
    copy.add_argument("source", metavar="SOURCE", help="the thread to copy")
    copy.add_argument("target", metavar="TARGET", help="the new thread id (without checkpoints)")

    stats = add_command(
        sub,
        common,
        "stats",
        cmd_stats,
        "rows and bytes per table and thread",
        about="""Rows and bytes of each table, and the newest threads with their sizes.
        The totals count every row (O(N)) unless --fast, which reads the database's
        statistics (estimates). The database read is named on stderr (and as "database"
        with --json), its password hidden.""",
        examples=["stats", "stats --fast --top 0", "stats --thread support-42 --json"],
    )
    stats.add_argument("--thread", metavar="THREAD", help="only this thread")
    stats.add_argument("--top", type=count, default=10, help="threads listed (default 10)")
    stats.add_argument(
        "--fast",
        action="store_true",
        help="table totals from the database's statistics (estimates) instead of counting",
    )
