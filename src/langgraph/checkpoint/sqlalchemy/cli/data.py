"""CLI commands that move data: ``copy``, ``export``, ``import``, and their parsers
(:func:`add_commands`).

``copy --from URL --to URL`` reads ours, an official SqliteSaver file or an official
PostgresSaver database (see :func:`langgraph.checkpoint.sqlalchemy.transfer.open_source`)
and writes our tables at ``--to`` (created if missing); ``export`` (the threads named,
``--all``, or those idle ``--idle-for``) and ``import`` use the global ``--url``. Each
shows a progress bar of checkpoints on a terminal (:func:`.common.progress_bar`, fed by
the ``progress`` callback of the transfer call). Each command imports the transfer
machinery (and ``rich``, for the progress bar) when it runs: building the parser does
not.

Nothing interrupted looks complete: ``copy`` and ``import`` write each thread in one
transaction and, stopped by Ctrl-C or SIGTERM, say how far they went and the command
that finishes (the same one); ``export`` writes a temporary file beside the one asked
for and renames it once its end line is written.
"""

from __future__ import annotations

import argparse
import errno
import io
import os
import shlex
import signal
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import asdict
from functools import partial
from typing import IO, TYPE_CHECKING, Any, cast, get_args

from langgraph.checkpoint.sqlalchemy._engine.defaults import url_from_env
from langgraph.checkpoint.sqlalchemy._transfer.kinds import SourceKind
from langgraph.checkpoint.sqlalchemy.cli.common import (
    NOT_FOUND,
    SCHEMA_ENV,
    CommandError,
    add_command,
    check_threads,
    duration,
    emit,
    masked,
    open_saver,
    path_argument,
    require_database,
)
from langgraph.checkpoint.sqlalchemy.cli.progress import progress_bar
from langgraph.checkpoint.sqlalchemy.errors import SchemaOutOfDateError, ThreadNotEmptyError

if TYPE_CHECKING:
    from langgraph.checkpoint.sqlalchemy import transfer


def add_commands(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add the data-moving commands to ``sub`` (what ``ArgumentParser.add_subparsers``
    returned), each command with the global options of the parent parser ``common``."""
    interrupted = (
        "interrupted (Ctrl-C, SIGTERM): each thread whole or absent; it prints how far it "
        "went and the command that finishes (the same one)"
    )
    cp = add_command(
        sub,
        common,
        "copy",
        cmd_copy,
        "copy threads from ours, a SqliteSaver file or a PostgresSaver database into ours",
        about="""Copy threads, every checkpoint of every namespace with its pending
        writes, from --from (our tables, an official SqliteSaver file or PostgresSaver
        database) into our tables at --to (created there if missing), each thread in one
        transaction, then verify by key that every one of the source is in the target.
        A thread the target holds whole is skipped; one it holds in part is refused
        unless --into-existing. A progress bar counts the checkpoints on a terminal.""",
        examples=[
            "copy --from checkpoints.sqlite --to postgresql://app@db/agents",
            "copy --from old.sqlite --to new.sqlite --thread support-42",
        ],
        env=[
            (SCHEMA_ENV, "the PostgreSQL schema of our tables at --to when --schema is not given")
        ],
        failed=f"{NOT_FOUND}; a thread refused or failing verification (MISMATCH)",
        interrupted=interrupted,
        progress=True,
    )
    cp.add_argument(
        "--from", dest="source", required=True, metavar="URL", help="the database to copy from"
    )
    cp.add_argument(
        "--to", dest="target", required=True, metavar="URL", help="our database, to copy into"
    )
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
    cp.add_argument(
        "--into-existing",
        action="store_true",
        help="also write into target threads that have some checkpoints, not all the source's",
    )

    ex = add_command(
        sub,
        common,
        "export",
        cmd_export,
        "write threads to a JSON lines file",
        about="""Write threads to a versioned JSON lines file that import reads back:
        the threads named, every thread (--all), or the threads whose newest checkpoint
        is older than --idle-for (with THREAD ids: those of them that are idle). The file
        is new, readable by its owner only, written under a temporary name and renamed
        once complete (- writes to stdout, where its last line proves it whole). A
        progress bar counts the checkpoints on a terminal.""",
        examples=[
            "export support-42 -o support-42.jsonl",
            "export --all -o everything.jsonl",
            "export --idle-for 90d -o archive.jsonl --json",
        ],
        failed=f"{NOT_FOUND}; the file exists (replace it with --yes)",
        interrupted="interrupted (Ctrl-C, SIGTERM): nothing is left under the file's name",
        progress=True,
    )
    ex.add_argument(
        "thread_ids", nargs="*", metavar="THREAD", help="threads to export (or --all, --idle-for)"
    )
    chosen = ex.add_mutually_exclusive_group()
    chosen.add_argument("--all", action="store_true", help="export every thread")
    chosen.add_argument(
        "--idle-for",
        type=duration,
        metavar="DURATION",
        help="threads whose newest checkpoint is older than this (30d, 12h, 90m)",
    )
    path_argument(
        ex.add_argument(
            "-o",
            "--output",
            required=True,
            metavar="FILE",
            help="new file (0600; an existing one only with --yes, never a symlink), written "
            "under a temporary name and renamed when complete; or - for stdout",
        )
    )

    im = add_command(
        sub,
        common,
        "import",
        cmd_import,
        "read a file written by export",
        about="""Load the threads of a file written by export into our tables at --url
        (created there if missing). The whole file is checked first: one that cannot be
        proved whole (no end line) is refused with nothing written, unless
        --allow-incomplete. Each thread is written in one transaction; a thread the
        database holds whole is skipped, one it holds in part is refused unless
        --into-existing. A progress bar counts the file's checkpoints on a terminal.""",
        examples=[
            "import support-42.jsonl",
            "import archive.jsonl --thread t1 --url postgresql://db/agents",
            "import - < support-42.jsonl",
        ],
        failed=f"{NOT_FOUND}; a file that cannot be proved whole; a thread refused",
        interrupted=interrupted,
        progress=True,
    )
    path_argument(im.add_argument("file", metavar="FILE", help="file, or - for stdin"))
    im.add_argument(
        "--thread", dest="threads", action="append", metavar="T", help="import this thread only"
    )
    im.add_argument(
        "--into-existing",
        action="store_true",
        help="also write into threads that have some checkpoints, not all the file's",
    )
    im.add_argument(
        "--allow-incomplete",
        action="store_true",
        help="import a file without its end line (an interrupted export, version 1 or 2) as it is",
    )


def _existing(e: ThreadNotEmptyError, target: str, done: str, source: str) -> CommandError:
    """The refusal of threads the target has in part, in the command line's words."""
    names = ", ".join(map(repr, e.thread_ids[:10])) + (", ..." if len(e.thread_ids) > 10 else "")
    return CommandError(
        f"{len(e.thread_ids)} thread(s) already have checkpoints in {masked(target)}, but not "
        f"every one of {source}: {names}; nothing was {done}. Add --into-existing to add the "
        "missing ones, or name the others with --thread",
        1,
    )


@contextmanager
def _sigterm_interrupts() -> Iterator[None]:
    """SIGTERM (``kill``, a container stopping) as Ctrl-C while a command writes: the
    thread being written is rolled back and the command says how far it went."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous if previous is not None else signal.SIG_DFL)


def _interrupted(
    e: transfer.Interrupted,
    done: tuple[str, int, int],
    where: str,
    again: list[str],
    note: str = "",
) -> int:
    """Say what an interrupted copy or import did (``done``: the verb, checkpoints and
    pending writes moved) and the command that finishes it (URLs masked; ``note`` said
    after it); the exit code of an interruption."""
    verb, checkpoints, writes = done
    moved = f"{verb} {checkpoints} checkpoints ({writes} pending writes)"
    rolled = (
        f"; thread {e.thread_id!r} was rolled back: none of its checkpoints is in {where}"
        if e.thread_id is not None
        else ""
    )
    command = shlex.join(["langgraph-checkpoint-sqlalchemy", *again])
    hidden = " (put the passwords shown as *** back)" if "***" in command else ""
    print(
        f"interrupted: {e.report.threads} of {e.total} threads done, {moved}, each whole in "
        f"{where}{rolled}. To finish, run the same command again (it skips the threads "
        f"{where} holds whole){hidden}{note}:\n  {command}",
        file=sys.stderr,
    )
    return 130


def _repeated(args: argparse.Namespace, *flags: str) -> list[str]:
    """The words that repeat the options of ``args`` a command shares: ``--schema``,
    ``--json``, each ``--thread`` and the set ``flags`` (attribute names)."""
    words = ["--schema", args.schema] if args.schema else []
    words += ["--json"] if args.json else []
    for thread_id in args.threads or ():
        words += ["--thread", thread_id]
    return words + ["--" + f.replace("_", "-") for f in flags if getattr(args, f)]


def cmd_copy(args: argparse.Namespace) -> int:
    from langgraph.checkpoint.sqlalchemy import transfer

    # The source is only read: a SQLite path that does not exist is refused, not created.
    require_database(args.source, "--from")
    args.url_in_use = args.source
    try:
        with (
            _sigterm_interrupts(),
            transfer.open_source(
                args.source, kind=args.from_kind, schema=args.from_schema
            ) as source,
        ):
            check_threads(source, args.threads or (), "nothing was copied")
            with open_saver(args, args.target, create=True, option="--to") as target:
                try:
                    target.setup()
                except SchemaOutOfDateError as e:
                    raise CommandError(f"--to {masked(args.target)}: {e}", 1) from e
                count = partial(transfer.count_checkpoints, source, args.threads)
                with progress_bar(args, "copying", "checkpoints", count) as progress:
                    report = transfer.copy_threads(
                        source,
                        target,
                        args.threads,
                        progress=progress,
                        into_existing=args.into_existing,
                    )
    except transfer.Interrupted as e:
        r = cast("transfer.CopyReport", e.report)
        again = ["copy", "--from", masked(args.source), "--to", masked(args.target)]
        again += ["--from-kind", args.from_kind] if args.from_kind != "auto" else []
        again += ["--from-schema", args.from_schema] if args.from_schema else []
        again += _repeated(args, "into_existing", "no_progress")
        done = ("copied", r.checkpoints_copied, r.writes_copied)
        return _interrupted(e, done, "the target", again)
    except transfer.UnknownSourceError as e:
        raise CommandError(f"--from {masked(args.source)}: {e}", 2) from e
    except ThreadNotEmptyError as e:
        raise _existing(e, args.target, "copied", "the source") from None
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


def _check_selection(args: argparse.Namespace) -> None:
    """Refuse an export that chooses no thread, or chooses them twice (THREAD and --all).

    Raises:
        CommandError: As a usage error (exit code 2).
    """
    if args.all and args.thread_ids:
        raise CommandError(
            "export: give THREAD ids or --all, not both (--all exports every thread)", 2
        )
    if not (args.all or args.thread_ids or args.idle_for is not None):
        raise CommandError(
            "export needs THREAD ids, --all or --idle-for DURATION: e.g. "
            "export --all -o FILE, export --idle-for 30d -o FILE",
            2,
        )


def _exported(args: argparse.Namespace, saver: Any) -> list[str] | None:
    """The threads ``export`` writes: those named, those idle for ``--idle-for`` (of the
    named ones, if any), or None for every thread (``--all``)."""
    if args.idle_for is None:
        return None if args.all else list(dict.fromkeys(args.thread_ids))
    idle = [t.thread_id for t in saver.list_threads(limit=None, idle_for=args.idle_for)]
    if not args.thread_ids:
        return idle
    named = set(args.thread_ids)
    return [t for t in idle if t in named]


def cmd_export(args: argparse.Namespace) -> int:
    from langgraph.checkpoint.sqlalchemy import transfer

    _check_selection(args)
    with open_saver(args, threads=args.thread_ids, what="nothing was exported") as saver:
        chosen = _exported(args, saver)
        total = partial(transfer.count_checkpoints, saver, chosen)
        if args.output == "-":  # no file to rename: the end line alone says it is whole
            with progress_bar(args, "exporting", "checkpoints", total) as progress:
                report = transfer.export_threads(saver, chosen, sys.stdout, progress=progress)
            sys.stdout.flush()
            print(_export_line(report), file=sys.stderr)
            return 0
        try:
            with (
                _sigterm_interrupts(),
                _output(args.output, overwrite=getattr(args, "yes", False)) as fp,
                progress_bar(args, "exporting", "checkpoints", total) as progress,
            ):
                report = transfer.export_threads(saver, chosen, fp, progress=progress)
        except KeyboardInterrupt:
            print(f"interrupted: nothing was written to {args.output}", file=sys.stderr)
            return 130
    emit(args, asdict(report), lambda: print(f"{_export_line(report)} to {args.output}"))
    return 0


@contextmanager
def _output(path: str, *, overwrite: bool) -> Iterator[IO[str]]:
    """The export file, written under a temporary name beside it (``.NAME.*.partial``)
    and renamed to ``path`` once the block ends without error: an interrupted export is
    never found under the name asked for (the temporary file is removed; after a
    ``kill -9`` it stays under its own name). The file is readable by its owner only
    (0600: it holds conversations). An existing file is replaced only with ``--yes``; a
    symbolic link is refused (it could point anywhere the operator can write).

    Raises:
        CommandError: The file exists (without ``--yes``) or is a symbolic link.
    """
    if os.path.islink(path):
        raise CommandError(f"{path} is a symbolic link: give the file's own path", 2)
    if not overwrite and os.path.lexists(path):
        raise CommandError(f"{path} exists: pass --yes to replace it, or choose another file", 1)
    folder, name = os.path.split(os.path.abspath(path))
    try:
        fd, partial = tempfile.mkstemp(prefix=f".{name}.", suffix=".partial", dir=folder)
    except OSError as e:  # the error names the file asked for, not the temporary one
        raise OSError(e.errno, e.strerror, path) from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fp:
            yield fp
            fp.flush()
            os.fsync(fp.fileno())
        _rename(partial, path, overwrite=overwrite)
    finally:
        with suppress(FileNotFoundError):
            os.unlink(partial)


def _rename(partial: str, path: str, *, overwrite: bool) -> None:
    """Give the finished ``partial`` file the name ``path``: over an existing file only
    with ``overwrite`` (a hard link, which never replaces one, where the file system
    has them)."""
    if overwrite:
        os.replace(partial, path)
        return
    try:
        os.link(partial, path)
    except FileExistsError:
        raise CommandError(
            f"{path} was created during the export: pass --yes to replace it, or choose "
            "another file",
            1,
        ) from None
    except OSError as e:
        if e.errno not in (errno.EPERM, errno.ENOTSUP, errno.EXDEV):
            raise
        if os.path.lexists(path):  # no hard links here: check, then rename
            raise CommandError(f"{path} was created during the export: pass --yes", 1) from e
        os.replace(partial, path)


def _export_line(report: transfer.ExportReport) -> str:
    return (
        f"exported {report.checkpoints} checkpoints ({report.writes} pending writes) of "
        f"{report.threads} threads"
    )


def cmd_import(args: argparse.Namespace) -> int:
    from langgraph.checkpoint.sqlalchemy import transfer

    try:
        with (
            _sigterm_interrupts(),
            _open_input(args.file) as fp,
            open_saver(args, create=True) as saver,
        ):
            saver.setup()
            with progress_bar(
                args, "importing", "checkpoints", partial(_planned, args, fp)
            ) as progress:
                report = transfer.import_threads(
                    saver,
                    fp,
                    thread_ids=args.threads,
                    into_existing=args.into_existing,
                    allow_incomplete=args.allow_incomplete,
                    progress=progress,
                )
    except transfer.Interrupted as e:
        r = cast("transfer.ImportReport", e.report)
        again = ["import", args.file]
        again += ["--url", masked(args.url)] if args.url != url_from_env() else []
        again += _repeated(args, "into_existing", "allow_incomplete", "no_progress")
        done = ("imported", r.checkpoints_imported, r.writes_imported)
        stdin = ", the same file on stdin" if args.file == "-" else ""
        return _interrupted(e, done, "the database", again, stdin)
    except transfer.IncompleteExportError as e:
        raise CommandError(f"{args.file}: {e}", 1) from e
    except transfer.ExportFormatError as e:
        raise CommandError(f"{args.file}: {e}", 2) from e
    except ThreadNotEmptyError as e:
        raise _existing(e, args.url_in_use, "imported", "the file") from None
    except LookupError as e:
        raise CommandError(f"{args.file}: {e.args[0]}", 1) from None
    except ConnectionError:
        raise  # the database's (CheckpointConnectionError), not the file's
    except OSError as e:
        raise CommandError(f"{args.file}: {e.strerror or e}", 2) from e

    def human() -> None:
        print(
            f"threads: {', '.join(map(repr, report.thread_ids)) or 'none'}\n"
            f"imported {report.checkpoints_imported} checkpoints ({report.writes_imported} "
            f"pending writes) of {report.threads} thread(s), skipped "
            f"{report.checkpoints_skipped} already present"
        )
        if not report.whole_file:
            print("WARNING: the file has no end line, nothing proves it whole (imported as it is)")
        for thread_id in report.left_out:
            print(f"LEFT OUT thread {thread_id!r}: the file ends inside it")

    emit(args, asdict(report), human)
    return 0


def _planned(args: argparse.Namespace, fp: IO[str]) -> int:
    """The checkpoints ``import`` handles: of the threads chosen, in the file."""
    from langgraph.checkpoint.sqlalchemy import transfer

    plan = transfer.import_plan(fp, allow_incomplete=args.allow_incomplete)
    chosen = dict.fromkeys(args.threads) if args.threads else plan
    return sum(plan.get(t, 0) for t in chosen)


@contextmanager
def _open_input(name: str) -> Iterator[IO[str]]:
    """The file to import; stdin read whole (the file is read twice: checked, then
    written)."""
    if name == "-":
        yield io.StringIO(sys.stdin.read())
        return
    with open(name, encoding="utf-8") as fp:
        yield fp
