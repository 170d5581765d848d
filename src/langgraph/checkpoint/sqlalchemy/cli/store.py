"""CLI commands on the long-term memory store: ``store list-namespaces``, ``store stats``,
``store sweep``, ``store copy``, and their parser (:func:`add_commands`).

Each is a thin layer over :class:`~langgraph.store.sqlalchemy.SQLAlchemyStore`'s public
methods (``list_namespaces``, ``stats``, ``sweep_ttl``) and, for ``copy``, over
:func:`langgraph.store.sqlalchemy.transfer.copy_store`. The store, LangGraph
and ``rich`` (the progress bar of ``copy``) are imported when a command runs, not when
the parser is built.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from langgraph.checkpoint.sqlalchemy.cli.common import (
    DATABASE_ENV,
    NO_DATABASE,
    CommandError,
    add_command,
    add_group,
    cell,
    count,
    emit,
    masked,
    opened,
    positive,
    read_from,
    require_database,
)
from langgraph.checkpoint.sqlalchemy.cli.progress import progress_bar
from langgraph.checkpoint.sqlalchemy.errors import SchemaOutOfDateError

if TYPE_CHECKING:
    from langgraph.store.base import IndexConfig

    from langgraph.store.sqlalchemy import SQLAlchemyStore


def add_commands(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add the ``store`` command group to ``sub`` (what ``ArgumentParser.add_subparsers``
    returned), each command with the global options of the parent parser ``common``."""
    ssub = add_group(
        sub,
        "store",
        "the long-term memory store: namespaces, stats, TTL, copy",
        about="""The long-term memory store (SQLAlchemyStore), whose tables live beside the
        checkpoints: list its namespaces, count its items, delete expired items, copy an
        official store in.""",
        examples=["store stats", "store list-namespaces --prefix memories", "store sweep"],
        failed=NO_DATABASE,
    )
    named = """The database read is named on stderr (and as "database" with --json), its
    password hidden."""
    ls = add_command(
        ssub,
        common,
        "list-namespaces",
        cmd_list_namespaces,
        "namespaces, in order",
        about=f"""List the namespaces of live items in order, labels joined by '.'; '*' in
        a prefix or suffix matches any one label. A full page ends with the offset of the
        next one. {named}""",
        examples=[
            "store list-namespaces",
            "store list-namespaces --prefix users.*.memories --json",
        ],
        failed=NO_DATABASE,
    )
    ls.add_argument("--prefix", metavar="A.B", help="only under this prefix (* = any label)")
    ls.add_argument("--suffix", metavar="A.B", help="only ending with these labels (* = any)")
    ls.add_argument("--max-depth", type=positive, help="truncate namespaces to N labels")
    ls.add_argument("--limit", type=positive, default=100, help="namespaces shown (default 100)")
    ls.add_argument("--offset", type=count, default=0, help="namespaces skipped")
    add_command(
        ssub,
        common,
        "stats",
        cmd_stats,
        "items, namespaces, vectors and expired items",
        about=f"""Count the store's live items, namespaces, stored vectors and expired
        items (deleted by store sweep). {named}""",
        examples=["store stats", "store stats --json --url postgresql://db/agents"],
        failed=NO_DATABASE,
    )
    add_command(
        ssub,
        common,
        "sweep",
        cmd_sweep,
        "delete the expired items now",
        about="""Delete the expired items now and print how many. No confirmation: an
        expired item is already invisible to every read.""",
        examples=["store sweep", "store sweep --json"],
        failed=NO_DATABASE,
    )
    cp = add_command(
        ssub,
        common,
        "copy",
        cmd_copy,
        "copy an official SqliteStore file or PostgresStore database into ours (--url)",
        about="""Copy the items of an official SqliteStore file or PostgresStore database
        into our store at --to (default --url; created there if missing), in
        transactions of --batch-size items, then verify that every item of the source is
        in the target. Re-running it catches up. A progress bar counts the items read
        on a terminal.""",
        examples=[
            "store copy --from store.sqlite --to postgresql://app@db/agents",
            "store copy --from postgresql://db/old --no-progress",
        ],
        env=[
            *DATABASE_ENV,
            (
                "(embedding provider)",
                "with --index, the variables of the embedding model's provider (e.g. "
                "OPENAI_API_KEY for openai:...)",
            ),
        ],
        failed=f"{NO_DATABASE}; an item missing or different in the target (MISMATCH)",
        progress=True,
    )
    cp.add_argument(
        "--from", dest="source", required=True, metavar="URL", help="the store to copy from"
    )
    cp.add_argument("--to", dest="target", metavar="URL", help="our database (default: --url)")
    cp.add_argument(
        "--from-kind",
        choices=["auto", "sqlite", "postgres"],
        default="auto",
        help="what the source is (default: from its URL)",
    )
    cp.add_argument("--from-schema", help="PostgreSQL schema of the source's tables")
    cp.add_argument(
        "--index",
        metavar="JSON",
        help='the target\'s index config, to embed items: {"dims": 1536, "embed": '
        '"openai:text-embedding-3-small", "fields": ["$"]} (source vectors of that size '
        "are reused)",
    )
    cp.add_argument("--batch-size", type=positive, default=500, help="items a transaction")
    cp.add_argument(
        "--max-value-mb",
        type=positive,
        default=16,
        help="largest value copied, in MiB of JSON text (default 16): larger ones are REJECTED",
    )


def _labels(text: str | None, option: str) -> tuple[str, ...] | None:
    if text is None:
        return None
    labels = tuple(text.split("."))
    if not all(labels):
        raise CommandError(
            f"{option} {text!r}: labels joined by '.', none empty (e.g. users.*.memories)", 2
        )
    return labels


def _store(
    args: argparse.Namespace, index: IndexConfig | None = None
) -> Callable[[str], SQLAlchemyStore]:
    """What :func:`.common.opened` builds: our store on a URL."""

    def build(url: str) -> SQLAlchemyStore:
        from langgraph.store.sqlalchemy import SQLAlchemyStore

        # An operator's command fails fast on a server that is down (one retry, at once).
        return SQLAlchemyStore.from_conn_string(
            url, schema=args.schema, index=index, retry_timeout=0
        )

    return build


def cmd_list_namespaces(args: argparse.Namespace) -> int:
    prefix = _labels(args.prefix, "--prefix")
    suffix = _labels(args.suffix, "--suffix")
    with opened(args, _store(args)) as store:
        found = store.list_namespaces(
            prefix=prefix,
            suffix=suffix,
            max_depth=args.max_depth,
            limit=args.limit,
            offset=args.offset,
        )
    names = [".".join(ns) for ns in found]
    database = read_from(args)

    def human() -> None:
        if not names:
            print("no namespaces")
        for name in names:
            print(cell(name))
        if args.limit and len(names) == args.limit:
            print(f"next page: --offset {args.offset + args.limit}")

    emit(args, {"database": database, "namespaces": names}, human)
    return 0


def cmd_stats(args: argparse.Namespace) -> int:
    with opened(args, _store(args)) as store:
        stats = asdict(store.stats())
    database = read_from(args)

    def human() -> None:
        width = max(map(len, stats))
        for name, value in stats.items():
            print(f"{name.ljust(width)}  {value}")
        if stats["expired"]:
            print("expired items are deleted by: langgraph-checkpoint-sqlalchemy store sweep")

    emit(args, {"database": database, **stats}, human)
    return 0


def cmd_sweep(args: argparse.Namespace) -> int:
    # No confirmation: an expired item is already invisible to every read.
    with opened(args, _store(args)) as store:
        deleted = store.sweep_ttl()
    emit(args, {"deleted": deleted}, lambda: print(f"deleted {deleted} expired item(s)"))
    return 0


def _index(text: str | None) -> IndexConfig | None:
    from langgraph.store.sqlalchemy.config import index_config
    from langgraph.store.sqlalchemy.vectors import IndexSpec

    if text is None:
        return None
    try:
        config = index_config(json.loads(text), "--index")
        if config is not None:
            IndexSpec(config)  # loads the embedding model: a bad name fails here
        return config
    except ValueError as e:
        raise CommandError(f"--index: {e}", 2) from None


def cmd_copy(args: argparse.Namespace) -> int:
    from langgraph.checkpoint.sqlalchemy.errors import UnknownSourceError
    from langgraph.store.sqlalchemy import transfer

    index = _index(args.index)
    target_url = args.target or args.url
    # The source is only read: a SQLite path that does not exist is refused, not created.
    require_database(args.source, "--from")
    args.url_in_use = args.source
    try:
        with transfer.open_store_source(
            args.source, kind=args.from_kind, schema=args.from_schema
        ) as source:
            option = "--to" if args.target else "--url"
            with opened(
                args, _store(args, index), target_url, create=True, option=option
            ) as target:
                try:
                    target.setup()
                except SchemaOutOfDateError as e:
                    raise CommandError(f"{option} {masked(target_url)}: {e}", 1) from e
                with progress_bar(args, "copying", "items", source.count) as progress:
                    report = transfer.copy_store(
                        source,
                        target,
                        batch_size=args.batch_size,
                        progress=progress,
                        max_value_bytes=args.max_value_mb * 1024 * 1024,
                    )
    except UnknownSourceError as e:
        raise CommandError(f"--from {masked(args.source)}: {e}", 2) from e

    def human() -> None:
        print(
            f"read {report.read} item(s) from the {report.source} store: copied "
            f"{report.copied} ({report.vectors_reused} with their embeddings), "
            f"{report.unchanged} already there, {report.expired} expired (not copied), "
            f"{report.rejected_count} rejected"
        )
        for r in report.rejected:
            print(f"REJECTED {cell(r.namespace)}/{cell(r.key)}: {cell(r.reason)}")
        if report.differ:
            shown = ", ".join(cell(d) for d in report.differing)
            print(
                f"MISMATCH {report.differ} item(s) missing or different in the target "
                f"(first: {shown}); run the copy again"
            )
        else:
            print(f"verified: all {report.verified} item(s) of the source are in the target")

    emit(args, asdict(report), human)
    return 1 if report.differ else 0
