"""CLI commands that move data: ``copy``, ``export``, ``import``, and their parsers
(:func:`add_commands`).

``copy --from URL --to URL`` reads ours, an official SqliteSaver file or an official
PostgresSaver database (see :func:`langgraph.checkpoint.sqlalchemy.transfer.open_source`)
and writes our tables at ``--to`` (created if missing); ``export`` and ``import`` use the
global ``--url``. Each command imports the transfer machinery (and ``rich``, for the
progress bar) when it runs: building the parser does not.
"""

from __future__ import annotations

import argparse
import errno
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict
from typing import IO, TYPE_CHECKING, Any, get_args

from .._source_kind import SourceKind
from ..errors import SchemaOutOfDateError, ThreadNotEmptyError
from .common import (
    CommandError,
    add_command,
    check_threads,
    emit,
    masked,
    open_saver,
    require_database,
)

if TYPE_CHECKING:
    from .. import transfer


def add_commands(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add the data-moving commands to the CLI's subparsers ``sub``.

    Args:
        sub: What ``ArgumentParser.add_subparsers`` returned.
        common: The parent parser of the global options.
    """
    cp = add_command(
        sub,
        common,
        "copy",
        cmd_copy,
        "copy threads from ours, a SqliteSaver file or a PostgresSaver database into ours",
    )
    cp.add_argument("--from", dest="source", required=True, metavar="URL", help="source")
    cp.add_argument("--to", dest="target", required=True, metavar="URL", help="our database")
    cp.add_argument(
        "--thread", dest="threads", action="append", metavar="T", help="copy this thread only"
    )
    cp.add_argument(
        "--from-kind",
        choices=get_args(SourceKind),
        default="auto",
        help="what the source is (default: detected from its tables)",
    )
    cp.add_argument("--from-schema", help="PostgreSQL schema of our tables in the source")
    cp.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    cp.add_argument(
        "--into-existing",
        action="store_true",
        help="also write into target threads that already have checkpoints (a re-run)",
    )

    ex = add_command(sub, common, "export", cmd_export, "write threads to a JSON lines file")
    ex.add_argument("thread_ids", nargs="+", metavar="THREAD")
    ex.add_argument(
        "-o",
        "--output",
        required=True,
        metavar="FILE",
        help="new file (0600; an existing one only with --yes, never a symlink), or - for stdout",
    )

    im = add_command(sub, common, "import", cmd_import, "read a file written by export")
    im.add_argument("file", metavar="FILE", help="file, or - for stdin")
    im.add_argument(
        "--thread", dest="threads", action="append", metavar="T", help="import this thread only"
    )
    im.add_argument(
        "--into-existing",
        action="store_true",
        help="also write into threads that already have checkpoints (else refused)",
    )


def _existing(e: ThreadNotEmptyError, target: str, done: str) -> CommandError:
    """The refusal of threads the target already has, in the command line's words."""
    names = ", ".join(map(repr, e.thread_ids[:10])) + (", ..." if len(e.thread_ids) > 10 else "")
    return CommandError(
        f"{len(e.thread_ids)} thread(s) already have checkpoints in {masked(target)}: "
        f"{names}; nothing was {done}. Add --into-existing to write into them (re-running "
        "an interrupted run), or name the others with --thread",
        1,
    )


@contextmanager
def _progress_bar(enabled: bool, total: int) -> Iterator[Callable[[int], None] | None]:
    if not enabled:
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

    with Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        transient=True,
    ) as bar:
        task = bar.add_task("copying checkpoints", total=total)
        yield lambda done: bar.update(task, completed=done)


def cmd_copy(args: argparse.Namespace) -> int:
    from .. import transfer

    # The source is only read: a SQLite path that does not exist is refused, not created.
    require_database(args.source, "--from")
    args.url_in_use = args.source
    try:
        with transfer.open_source(
            args.source, kind=args.from_kind, schema=args.from_schema
        ) as source:
            check_threads(source, args.threads or (), "nothing was copied")
            with open_saver(args, args.target, create=True, option="--to") as target:
                try:
                    target.setup()
                except SchemaOutOfDateError as e:
                    raise CommandError(f"--to {masked(args.target)}: {e}", 1) from e
                show = not (args.no_progress or args.json) and sys.stderr.isatty()
                total = transfer.count_checkpoints(source, args.threads) if show else 0
                with _progress_bar(show, total) as progress:
                    report = transfer.copy_threads(
                        source,
                        target,
                        args.threads,
                        progress=progress,
                        into_existing=args.into_existing,
                    )
    except transfer.UnknownSourceError as e:
        raise CommandError(f"--from {masked(args.source)}: {e}", 2) from e
    except ThreadNotEmptyError as e:
        raise _existing(e, args.target, "copied") from None
    except SchemaOutOfDateError as e:
        raise CommandError(f"--from {masked(args.source)}: {e}", 1) from e

    def human() -> None:
        print(
            f"copied {report.checkpoints_copied} checkpoints ({report.writes_copied} pending "
            f"writes) of {report.threads} thread(s), skipped {report.checkpoints_skipped} "
            "already present"
        )
        for m in report.mismatches:
            print(
                f"MISMATCH thread {m.thread_id!r}: of its {m.source_count} checkpoints in "
                f"the source, {m.missing_checkpoints} are not in the target and "
                f"{m.missing_writes} pending writes are missing (first: {m.first_missing}); "
                "run the copy again"
            )
        for r in report.refused:
            shown = r.thread_id if len(r.thread_id) <= 60 else r.thread_id[:60] + "..."
            print(f"REFUSED thread {shown!r}, nothing of it copied: {r.reason}")
        if not report.mismatches and not report.refused:
            print("verified: every checkpoint and pending write of the source is in the target")
        elif not report.mismatches:
            print("verified: every other thread's checkpoints and pending writes are in the target")

    emit(args, asdict(report), human)
    return 1 if report.mismatches or report.refused else 0


def cmd_export(args: argparse.Namespace) -> int:
    from .. import transfer

    with open_saver(args, threads=args.thread_ids, what="nothing was exported") as saver:
        if args.output == "-":
            report = transfer.export_threads(saver, args.thread_ids, sys.stdout)
            sys.stdout.flush()
            print(_export_line(report), file=sys.stderr)
            return 0
        with _open_output(args.output, overwrite=getattr(args, "yes", False)) as fp:
            report = transfer.export_threads(saver, args.thread_ids, fp)
    emit(args, asdict(report), lambda: print(f"{_export_line(report)} to {args.output}"))
    return 0


def _open_output(path: str, *, overwrite: bool) -> IO[str]:
    """The export file, new and readable by its owner only (0600: it holds
    conversations). An existing file is replaced only with ``--yes``; a symbolic link is
    never followed (it could point anywhere the operator can write).

    Raises:
        CommandError: The file exists (without ``--yes``) or is a symbolic link.
    """
    flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | (os.O_TRUNC if overwrite else os.O_EXCL)
    try:
        fd = os.open(path, flags, 0o600)
    except FileExistsError:
        if os.path.islink(path):
            raise CommandError(f"{path} is a symbolic link: give the file's own path", 2) from None
        raise CommandError(
            f"{path} exists: pass --yes to replace it, or choose another file", 1
        ) from None
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise CommandError(f"{path} is a symbolic link: give the file's own path", 2) from e
        raise
    if overwrite and hasattr(os, "fchmod"):
        os.fchmod(fd, 0o600)  # a replaced file keeps its mode otherwise (0644: readable)
    return os.fdopen(fd, "w", encoding="utf-8")


def _export_line(report: transfer.ExportReport) -> str:
    return (
        f"exported {report.checkpoints} checkpoints ({report.writes} pending writes) of "
        f"{report.threads} threads"
    )


def cmd_import(args: argparse.Namespace) -> int:
    from .. import transfer

    try:
        with _open_input(args.file) as fp, open_saver(args, create=True) as saver:
            saver.setup()
            report = transfer.import_threads(
                saver, fp, thread_ids=args.threads, into_existing=args.into_existing
            )
    except transfer.ExportFormatError as e:
        raise CommandError(f"{args.file}: {e}", 2) from e
    except ThreadNotEmptyError as e:
        raise _existing(e, args.url_in_use, "imported") from None
    except LookupError as e:
        raise CommandError(f"{args.file}: {e.args[0]}", 1) from None
    except ConnectionError:
        raise  # the database's (CheckpointConnectionError), not the file's
    except OSError as e:
        raise CommandError(f"{args.file}: {e.strerror or e}", 2) from e

    emit(
        args,
        asdict(report),
        lambda: print(
            f"threads: {', '.join(map(repr, report.thread_ids)) or 'none'}\n"
            f"imported {report.checkpoints_imported} checkpoints ({report.writes_imported} "
            f"pending writes) of {report.threads} thread(s), skipped "
            f"{report.checkpoints_skipped} already present"
        ),
    )
    return 0


@contextmanager
def _open_input(name: str) -> Iterator[IO[str]]:
    if name == "-":
        yield sys.stdin
        return
    with open(name, encoding="utf-8") as fp:
        yield fp
