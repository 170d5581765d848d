"""CLI commands on the schema of the checkpoint tables: ``upgrade``, ``downgrade``,
``current``, ``stamp``, ``reindex-metadata``, and their parsers (:func:`add_commands`).

Each is a thin layer over :mod:`langgraph.checkpoint.sqlalchemy.migrate` on one write
transaction (:func:`.common.schema_connection`); ``--sql`` prints the DDL offline. Each
command imports :mod:`~langgraph.checkpoint.sqlalchemy.migrate` (Alembic) when it runs:
building the parser does not.
"""

from __future__ import annotations

import argparse
import sys
from functools import partial
from typing import Any

from langgraph.checkpoint.sqlalchemy.cli.common import (
    NO_DATABASE,
    CommandError,
    add_command,
    confirm,
    emit,
    open_saver,
    resolve,
    schema_connection,
    where,
)
from langgraph.checkpoint.sqlalchemy.cli.progress import progress_bar


def _state(current: str | None) -> str:
    from langgraph.checkpoint.sqlalchemy import migrate

    if current == migrate.head_revision():
        return "at head"
    if migrate.is_ahead(current):
        return (
            "ahead of this package: migrated by a newer version of "
            "langgraph-checkpoint-sqlalchemy; upgrade the package"
        )
    return "behind head: run langgraph-checkpoint-sqlalchemy upgrade"


def _revision_line(args: argparse.Namespace, current: str | None) -> None:
    from langgraph.checkpoint.sqlalchemy import migrate

    print(
        f"{where(args)}: revision {current or 'none'} (head {migrate.head_revision()}), "
        f"{_state(current)}"
    )


def _revision_json(current: str | None) -> dict[str, Any]:
    from langgraph.checkpoint.sqlalchemy import migrate

    head = migrate.head_revision()
    return {
        "revision": current,
        "head": head,
        "at_head": current == head,
        "ahead": migrate.is_ahead(current),
    }


def _print_revision(args: argparse.Namespace, current: str | None) -> None:
    emit(args, _revision_json(current), lambda: _revision_line(args, current))


def _offline(args: argparse.Namespace, command: str) -> int:
    """``--sql``: print the DDL of ``command`` to ``args.revision``, touching no database."""
    from langgraph.checkpoint.sqlalchemy import migrate

    resolve(args.url)
    sys.stdout.write(migrate.offline_sql(args.url, command, args.revision, args.schema))
    return 0


def _moved(args: argparse.Namespace, command: str, *, create: bool = False) -> int:
    """Run ``migrate.<command>`` (upgrade, downgrade, stamp) to ``args.revision`` and
    print the revision the tables are at then. ``create``: a SQLite file may be made."""
    from langgraph.checkpoint.sqlalchemy import migrate

    with schema_connection(args, create=create) as conn:
        getattr(migrate, command)(conn, args.revision, schema=args.schema)
        current = migrate.current_revision(conn, schema=args.schema)
    _print_revision(args, current)
    return 0


def cmd_upgrade(args: argparse.Namespace) -> int:
    if args.sql:
        return _offline(args, "upgrade")
    return _moved(args, "upgrade", create=True)


def cmd_downgrade(args: argparse.Namespace) -> int:
    if args.sql:
        return _offline(args, "downgrade")
    if args.revision == "base":
        confirm(args, f"Drop every checkpoint table of this library at {where(args)}?")
    return _moved(args, "downgrade")


def cmd_current(args: argparse.Namespace) -> int:
    from langgraph.checkpoint.sqlalchemy import migrate

    with schema_connection(args) as conn:
        current = migrate.current_revision(conn, schema=args.schema)
    _print_revision(args, current)
    if args.check and current != migrate.head_revision():
        print(f"error: the tables are {_state(current)}", file=sys.stderr)
        return 1
    return 0


def cmd_stamp(args: argparse.Namespace) -> int:
    # No new SQLite file: a version table alone would pass "current --check" with no tables.
    return _moved(args, "stamp")


def cmd_reindex_metadata(args: argparse.Namespace) -> int:
    from langgraph.checkpoint.sqlalchemy._codec.display import masked_text
    from langgraph.checkpoint.sqlalchemy._codec.metakeys import COLUMN_KEYS, checked_keys
    from langgraph.checkpoint.sqlalchemy.saver import SQLAlchemySaver

    try:
        checked_keys(args.key)  # before connecting; its message masked (a URL given as key)
    except ValueError as e:
        raise CommandError(masked_text(str(e)), 2) from e
    if own := sorted(set(args.key) & COLUMN_KEYS):
        raise CommandError(
            f"{', '.join(own)}: a column of the checkpoints table serves filters on "
            "source, step and run_id; nothing to index (see docs/concepts.md)",
            2,
        )
    with open_saver(args) as saver:
        indexer = SQLAlchemySaver(
            saver.engine, saver.async_engine, schema=saver.schema, metadata_index_keys=args.key
        )
        total = partial(_checkpoints, saver)
        with progress_bar(args, "indexing", "checkpoints", total) as progress:
            keys = indexer.reindex_metadata(progress=progress)
    emit(
        args,
        {"indexed": keys},
        lambda: print(
            f"indexed {', '.join(keys)}"
            if keys
            else f"nothing to index: {', '.join(args.key)} already indexed"
        ),
    )
    return 0


def _checkpoints(saver: Any) -> int:
    """The checkpoints stored: what ``reindex-metadata`` reads."""
    return sum(t.checkpoints for t in saver.list_threads(limit=None))


def add_commands(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add the schema commands to ``sub`` (what ``ArgumentParser.add_subparsers``
    returned), each command with the global options of the parent parser ``common``."""
    sql = "print the SQL instead, touching no database (offline; --url names the dialect)"
    up = add_command(
        sub,
        common,
        "upgrade",
        cmd_upgrade,
        "migrate the tables up (to head)",
        about="""Migrate the checkpoint and store tables up to REVISION (default head),
        creating them on an empty database (a SQLite file is created if missing). Prints
        the revision the tables are at then.""",
        examples=[
            "upgrade",
            "upgrade --url postgresql+psycopg://app@db/agents",
            "upgrade --sql --url postgresql://db/agents > upgrade.sql",
        ],
        failed=NO_DATABASE,
    )
    up.add_argument(
        "revision",
        metavar="REVISION",
        nargs="?",
        default="head",
        help="the revision to reach (default head)",
    )
    up.add_argument("--sql", action="store_true", help=sql)
    down = add_command(
        sub,
        common,
        "downgrade",
        cmd_downgrade,
        "migrate down to REVISION ('base' drops our tables)",
        about="""Migrate the tables down to REVISION; base drops every table of this
        library (asks first unless --yes). Downgrades keep the data or refuse, changing
        nothing.""",
        examples=[
            "downgrade 0008_step_source_in_id_index",
            "downgrade base --yes",
            "downgrade base --sql",
        ],
        failed=f"{NO_DATABASE}; the confirmation refused",
    )
    down.add_argument(
        "revision", metavar="REVISION", help="the revision to go down to (base: none)"
    )
    down.add_argument("--sql", action="store_true", help=sql)
    cur = add_command(
        sub,
        common,
        "current",
        cmd_current,
        "print the database's revision",
        about="""Print the database's revision, the head of this package, and whether the
        tables are at head, behind (run upgrade) or ahead (migrated by a newer version of
        the package). With --check, a readiness probe: exit 1 unless at head.""",
        examples=["current", "current --check"],
        failed=f"{NO_DATABASE}; with --check, tables behind or ahead of head",
    )
    cur.add_argument("--check", action="store_true", help="exit 1 unless at head")
    stamp = add_command(
        sub,
        common,
        "stamp",
        cmd_stamp,
        "record REVISION as current without migrating",
        about="""Record REVISION in the version table without running any migration
        (for tables created or repaired by hand). Creates no SQLite file.""",
        examples=["stamp head", "stamp 0009_store --url postgresql://db/agents"],
        failed=NO_DATABASE,
    )
    stamp.add_argument("revision", metavar="REVISION", help="the revision to record (or head)")
    reindex = add_command(
        sub,
        common,
        "reindex-metadata",
        cmd_reindex_metadata,
        "index the stored checkpoints for metadata keys (SQLite, MySQL/MariaDB)",
        about="""Index the stored checkpoints for metadata keys, so that filters on them
        read the index (SQLite, MySQL/MariaDB; PostgreSQL's GIN index covers every key).
        Run it after every writer lists the keys in metadata_index_keys. One transaction
        over every checkpoint; a progress bar counts the checkpoints on a terminal.""",
        examples=["reindex-metadata user_id", "reindex-metadata user_id tenant --no-progress"],
        progress=True,
        failed=NO_DATABASE,
    )
    reindex.add_argument(
        "key",
        metavar="KEY",
        nargs="+",
        help="metadata keys to index (the keys your writers list in metadata_index_keys)",
    )
