"""Interrupted copies, exports and imports never leave something that looks complete.

* ``copy`` and ``import`` write each thread in one transaction: interrupted (a
  ``KeyboardInterrupt`` inside a thread, SIGINT, SIGTERM, ``kill -9`` of the real CLI,
  sent once it has paused at a known checkpoint: ``paused_cli.py``, never after a sleep),
  every thread of the target holds all of its checkpoints or none, and the same command
  again finishes the work (the CLI prints it, passwords masked).
* ``export`` writes a temporary file renamed at the end, closed by a line that counts
  what the file holds: ``import`` refuses, before writing anything, a file cut anywhere,
  one whose counts disagree, and (without ``--allow-incomplete``) a version 1 or 2 file.

Sources: ours, an official ``SqliteSaver`` file, an official ``PostgresSaver`` database
(real graphs: an interrupt, a subgraph, a failed superstep). Targets: a SQLite file,
PostgreSQL and MariaDB, each a database of its own.
"""

from __future__ import annotations

import io
import json
import os
import selectors
import shlex
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, cast

import pytest
from langchain_core.runnables import RunnableConfig
from sqlalchemy import create_engine, func, select
from sqlalchemy.engine import make_url
from sqlalchemy.pool import NullPool

from langgraph.checkpoint.sqlalchemy import SQLAlchemySaver
from langgraph.checkpoint.sqlalchemy.schema import checkpoints, writes
from langgraph.checkpoint.sqlalchemy.transfer import (
    IncompleteExportError,
    Interrupted,
    copy_threads,
    export_threads,
    import_threads,
    open_source,
)

from ..checkpoints import put_numbered_chain
from ..graphs import thread as cfg
from ..provision import BACKENDS
from ..transfer.test_transfer import (
    PROG,
    THREADS,
    build_source,
    cli,
    history,
    our_saver,
    run_graphs,
)

SOURCES = ("ours", "sqlite", "postgres")
TARGETS = [b for b in ("sqlite-file", "postgres", "mariadb") if b in BACKENDS]
#: The threads of a source in the order copy and export take them (sorted ids).
ORDER = sorted(THREADS)


@pytest.fixture
def new_url(fresh_databases: Callable[..., str]) -> Callable[[str, str], str]:
    """Call it as ``new_url(backend, name)`` for the URL of a new, empty database."""
    return lambda backend, name: fresh_databases(
        backend, filename=f"{name}.sqlite", prefix="lgsa_ti"
    )


def source_url(kind: str, tmp_path: Path, new_url: Callable[[str, str], str]) -> str:
    """A source of the three threads: ours (a SQLite file), or an official saver's."""
    if kind == "ours":
        url = f"sqlite:///{tmp_path / 'ours-source.sqlite'}"
        with our_saver(url) as saver:
            run_graphs(saver)
        return url
    return build_source(kind, tmp_path, lambda: new_url("postgres", "source"))


def held(saver: SQLAlchemySaver) -> dict[str, int]:
    """``{thread: checkpoints}`` of every thread in ``saver``."""
    return {t.thread_id: t.checkpoints for t in saver.list_threads()}


def rows_of(saver: SQLAlchemySaver, thread_id: str) -> int:
    """Rows of a thread in every table (checkpoints, values, writes, index)."""
    return sum(t["rows"] for t in saver.storage_stats(thread_id).values())


def source_counts(source: str) -> dict[str, int]:
    with open_source(source) as src:
        return {t: len(list(src.list(cast(RunnableConfig, cfg(t))))) for t in ORDER}


def exported(source: str) -> str:
    """The export of every thread of ``source``, as text."""
    out = io.StringIO()
    with open_source(source) as src:
        export_threads(src, None, out)
    return out.getvalue()


# -- copy and import interrupted inside a thread --------------------------------------------


def interrupt_at(n: int) -> Callable[[int], None]:
    """A progress callback raising ``KeyboardInterrupt`` (Ctrl-C) at checkpoint ``n``."""

    def progress(done: int) -> None:
        if done == n:
            raise KeyboardInterrupt

    return progress


class InterruptedFile(io.StringIO):
    """An export file whose reading raises ``KeyboardInterrupt`` (as Ctrl-C would) at the
    second record of ``thread_id``, once the file has been read to its end (the import's
    check): inside that thread's transaction."""

    def __init__(self, text: str, thread_id: str) -> None:
        super().__init__(text)
        self.mark = json.dumps({"thread_id": thread_id})[:-1]
        self.checked = False
        self.seen = 0

    def readline(self, size: int | None = -1) -> str:  # type: ignore[override]
        line = super().readline(-1 if size is None else size)
        if not line:
            self.checked = True
        elif self.checked and line.startswith(self.mark + ","):
            self.seen += 1
            if self.seen == 2:
                raise KeyboardInterrupt
        return line


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("source_kind", SOURCES)
@pytest.mark.parametrize("how", ["copy", "import"])
def test_copy_or_import_interrupted_inside_a_thread_leaves_it_absent_and_the_same_call_finishes(
    how: str, source_kind: str, target: str, tmp_path: Path, new_url: Callable[[str, str], str]
) -> None:
    source = source_url(source_kind, tmp_path, new_url)
    counts = source_counts(source)
    first, second = ORDER[:2]
    assert counts[second] >= 2, "the interruption must come inside the thread"
    text = exported(source)

    def run(dst: SQLAlchemySaver, interrupted: bool) -> Any:
        """Copy or import into ``dst``; ``interrupted``: Ctrl-C after the second
        thread's first checkpoint, inside its transaction."""
        if how == "import":
            return import_threads(
                dst, InterruptedFile(text, second) if interrupted else io.StringIO(text)
            )
        with open_source(source) as src:
            stop = interrupt_at(counts[first] + 1) if interrupted else None
            return copy_threads(src, dst, progress=stop)

    with our_saver(new_url(target, "target")) as dst:
        with pytest.raises(Interrupted) as stopped:
            run(dst, interrupted=True)
        assert isinstance(stopped.value, KeyboardInterrupt)
        assert (stopped.value.thread_id, stopped.value.total) == (second, len(ORDER))
        assert stopped.value.report.threads == 1
        assert held(dst) == {first: counts[first]}
        assert rows_of(dst, second) == 0, "no write or value of the rolled-back thread stays"
        again = run(dst, interrupted=False)  # the same call: the whole thread is skipped
        moved = again.checkpoints_copied if how == "copy" else again.checkpoints_imported
        assert (again.checkpoints_skipped, moved) == (
            counts[first],
            sum(counts.values()) - counts[first],
        )
        assert held(dst) == counts
        with open_source(source) as original:
            for t in ORDER:
                assert history(dst, t) == history(original, t), t
        if how == "copy":
            assert again.mismatches == [] and again.refused == []


# -- export files that are not whole ----------------------------------------------------------


def cuts(text: str) -> list[int]:
    """Where to cut an export: nothing left, every line end but the last, the middle of
    every line, one character into the last line and just before its end."""
    ends = [i + 1 for i, ch in enumerate(text) if ch == "\n"]
    starts = [0, *ends[:-1]]
    middles = [(a + b) // 2 for a, b in zip(starts, ends, strict=True)]
    return sorted({0, *ends[:-1], *middles, starts[-1] + 1, len(text) - 2})


def damaged(text: str) -> dict[str, tuple[str, str]]:
    """Whole-looking export files that are not the export: ``{case: (text, message)}``."""
    lines = text.splitlines(keepends=True)
    first_end = next(i for i, line in enumerate(lines) if "end_of_thread" in line)
    end = json.loads(lines[-1])
    return {
        "a record lost": (
            "".join(lines[:1] + lines[2:]),
            "lines lost or added",
        ),
        "a record twice": ("".join(lines[:2] + lines[1:]), "lines lost or added"),
        "a whole thread lost": ("".join(lines[:1] + lines[first_end + 1 :]), "end line counts"),
        "two exports joined": (text + text, "after the end of the export"),
        "a count edited": (
            "".join(lines[:-1]) + json.dumps({**end, "checkpoints": end["checkpoints"] + 1}) + "\n",
            "end line counts",
        ),
        "an end line lost": (
            "".join(lines[:first_end] + lines[first_end + 1 :]),
            "has no end line before thread",
        ),
    }


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("source_kind", SOURCES)
def test_an_export_cut_anywhere_or_damaged_is_refused_before_anything_is_written(
    source_kind: str, target: str, tmp_path: Path, new_url: Callable[[str, str], str]
) -> None:
    text = exported(source_url(source_kind, tmp_path, new_url))
    url = new_url(target, "target")
    with our_saver(url) as dst:
        points = cuts(text)
        assert len(points) > 3 * len(ORDER)
        for cut in points:
            with pytest.raises(IncompleteExportError, match="nothing was imported"):
                import_threads(dst, io.StringIO(text[:cut]))
            assert held(dst) == {}, cut
        for case, (bad, message) in damaged(text).items():
            with pytest.raises(IncompleteExportError, match=message):
                import_threads(dst, io.StringIO(bad))
            assert held(dst) == {}, case
    half = tmp_path / "half.jsonl"
    half.write_text(text[: len(text) // 2])
    done = cli("import", str(half), "--url", url)
    assert done.returncode == 1, done.stderr
    assert "nothing was imported" in done.stderr and "--allow-incomplete" in done.stderr
    with our_saver(url) as dst:
        assert held(dst) == {}


def test_old_versions_and_cut_files_import_only_with_allow_incomplete(tmp_path: Path) -> None:
    """A version 2 file has no end line: refused (export again), or imported as it is
    with --allow-incomplete. A version 3 file cut inside a thread imports, with the flag,
    the threads it holds whole and leaves the cut one out."""
    source = f"sqlite:///{tmp_path / 'source.sqlite'}"
    with our_saver(source) as saver:
        run_graphs(saver)
    text = exported(source)
    counts = source_counts(source)
    lines = text.splitlines(keepends=True)
    v2 = json.dumps({**json.loads(lines[0]), "version": 2}) + "\n"
    v2 += "".join(line for line in lines[1:] if "end_of_" not in line)
    old = tmp_path / "v2.jsonl"
    old.write_text(v2)
    target = f"sqlite:///{tmp_path / 'target.sqlite'}"
    refused = cli("import", str(old), "--url", target)
    assert refused.returncode == 1, refused.stderr
    assert "version 2 has no end line" in refused.stderr
    assert "Export the threads again" in refused.stderr
    done = cli("import", str(old), "--url", target, "--allow-incomplete", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["whole_file"] is False and report["left_out"] == []
    assert report["checkpoints_imported"] == sum(counts.values())

    # cut in the middle of the second thread's records
    second = [i for i, line in enumerate(lines) if f'"thread_id": "{ORDER[1]}"' in line]
    cut = tmp_path / "cut.jsonl"
    cut.write_text("".join(lines[: second[1]]))
    other = f"sqlite:///{tmp_path / 'other.sqlite'}"
    done = cli("import", str(cut), "--url", other, "--allow-incomplete")
    assert done.returncode == 0, done.stderr
    assert f"LEFT OUT thread {ORDER[1]!r}" in done.stdout
    assert "WARNING: the file has no end line" in done.stdout
    with our_saver(other) as dst:
        assert held(dst) == {ORDER[0]: counts[ORDER[0]]}
    chosen = cli("import", str(cut), "--url", other, "--allow-incomplete", "--thread", ORDER[1])
    assert chosen.returncode == 1 and "the file ends inside" in chosen.stderr, chosen.stderr


# -- the real CLI, killed -------------------------------------------------------------------------

#: The real CLI through ``paused_cli.py``: it pauses at a known checkpoint until signalled.
PAUSED = [sys.executable, str(Path(__file__).with_name("paused_cli.py"))]
#: Checkpoints of the threads of the big source, in the order every command takes them.
#: The CLI is signalled inside the last thread, ``z``, once all of it (its pending write
#: on its last checkpoint included) is written in its transaction, which is not yet
#: committed. An export has then written some 125 kB (about 630 bytes a checkpoint): more
#: than its file's buffers hold, so the file on disk is not empty.
COUNTS = {"a": 5, "b": 5, "z": 200}
#: The progress count (checkpoints handled) at the last checkpoint of ``z``.
INSIDE_Z = sum(COUNTS.values())


@dataclass
class Big:
    """A SQLite file of ours with the threads of :data:`COUNTS`, and its export."""

    source: str
    dump: Path
    counts: dict[str, int]


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Big:
    """The source of the killed CLI's tests (made once a module)."""
    folder = tmp_path_factory.mktemp("big")
    source = str(folder / "big.sqlite")
    with our_saver(source) as saver:
        for thread_id, n in COUNTS.items():
            config = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
            put_numbered_chain(saver, config, n, lambda step: {"step": step, "source": "loop"})
    dump = folder / "big.jsonl"
    done = cli("--url", source, "export", *COUNTS, "-o", str(dump))
    assert done.returncode == 0, done.stderr
    return Big(source, dump, dict(COUNTS))


def committed(url: str) -> dict[str, int]:
    """``{thread: checkpoints}`` committed in our tables at ``url`` (none before they
    exist), read on a connection of its own."""
    engine = create_engine(url, poolclass=NullPool)
    try:
        with engine.connect() as conn:
            c = checkpoints.c
            rows = conn.execute(select(c.thread_id, func.count()).group_by(c.thread_id))
            return {str(t): int(n) for t, n in rows}
    except Exception:
        return {}
    finally:
        engine.dispose()


def write_rows(url: str, thread_id: str) -> int:
    engine = create_engine(url, poolclass=NullPool)
    try:
        with engine.connect() as conn:
            query = select(func.count()).where(writes.c.thread_id == thread_id)
            return int(conn.execute(query).scalar_one())
    finally:
        engine.dispose()


def signalled(
    argv: list[str],
    at: int,
    sig: int,
    paused: Callable[[], None],
    stdout: IO[str] | None = None,
) -> tuple[int, str]:
    """Run the CLI with ``argv``, wait until it has handled ``at`` checkpoints and
    paused there (``paused_cli.py``), run ``paused()`` (the test's checks of that moment)
    and send it ``sig``; its exit code and what it printed (stderr, then stdout, unless
    ``stdout`` is given: a file to write it to)."""
    ready, ready_child = os.pipe()
    hold_child, hold = os.pipe()  # the test never writes to it
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        try:
            proc = subprocess.Popen(
                [*PAUSED, str(at), str(ready_child), str(hold_child), *argv],
                stdout=stdout or out,
                stderr=err,
                pass_fds=(ready_child, hold_child),
            )
        finally:
            os.close(ready_child)
            os.close(hold_child)
        try:
            with selectors.DefaultSelector() as waiting:
                waiting.register(ready, selectors.EVENT_READ)
                assert waiting.select(300), f"the CLI did not reach checkpoint {at} in 300 s"
            if os.read(ready, 100) != f"paused at {at}\n".encode():
                proc.wait(120)
                err.seek(0)
                pytest.fail(f"the CLI ended before checkpoint {at}: {err.read()}")
            paused()
            proc.send_signal(sig)
            code = proc.wait(timeout=120)
        finally:
            os.close(ready)
            os.close(hold)  # were the test to fail first, the CLI ends (as an error)
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        out.seek(0)
        err.seek(0)
        return code, err.read() + out.read()


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("command", ["copy", "import"])
def test_the_cli_killed_inside_a_thread_leaves_it_absent_and_prints_the_command_that_finishes(
    command: str, target: str, big: Big, new_url: Callable[[str, str], str]
) -> None:
    url = new_url(target, "target")
    if target == "postgres":  # a password to mask (the server trusts the test's host)
        url = make_url(url).set(password="s3cret").render_as_string(hide_password=False)
    if command == "copy":
        argv = ["copy", "--from", big.source, "--to", url, "--no-progress"]
    else:
        argv = ["import", str(big.dump), "--url", url]

    def inside_z() -> None:  # the other threads are committed, z is not (yet)
        assert committed(url) == {"a": 5, "b": 5}

    # kill -9 inside the long thread's transaction: the others whole, it absent
    code, _ = signalled(argv, INSIDE_Z, signal.SIGKILL, inside_z)
    assert code == -signal.SIGKILL
    assert committed(url) == {"a": 5, "b": 5}
    assert write_rows(url, "z") == 0

    # Ctrl-C (import) or SIGTERM (copy): the same, and the command that finishes
    with our_saver(url) as saver:
        saver.delete_thread("b")  # written again before z: the report counts it
    sig = signal.SIGTERM if command == "copy" else signal.SIGINT
    code, err = signalled(argv, INSIDE_Z, sig, inside_z)
    assert code == 130, err  # SIGTERM went through the CLI's handler (not killed by it)
    done = "copied" if command == "copy" else "imported"
    assert f"interrupted: 2 of 3 threads done, {done} 5 checkpoints" in err, err
    assert "thread 'z' was rolled back: none of its checkpoints is in" in err, err
    assert committed(url) == {"a": 5, "b": 5}
    assert write_rows(url, "z") == 0
    assert "s3cret" not in err
    finish = shlex.split(err.strip().splitlines()[-1])
    assert finish[:2] == ["langgraph-checkpoint-sqlalchemy", command], err
    if target == "postgres":
        assert "(put the passwords shown as *** back)" in err
        finish = [w.replace("***", "s3cret") for w in finish]
    again = subprocess.run(
        [*PROG, *finish[1:]], capture_output=True, text=True, timeout=600, check=False
    )
    assert again.returncode == 0, again.stderr
    assert committed(url) == big.counts
    if command == "copy":
        assert "verified: every checkpoint and pending write" in again.stdout


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL])
def test_an_export_killed_midway_leaves_nothing_under_its_name_and_its_remains_are_refused(
    sig: int, big: Big, tmp_path: Path, new_url: Callable[[str, str], str]
) -> None:
    out = tmp_path / "threads.jsonl"

    def partials() -> list[Path]:
        return [p for p in tmp_path.iterdir() if p.name.endswith(".partial")]

    def begun() -> None:  # z written up to its last record, not its end lines
        assert [p.stat().st_size > 0 for p in partials()] == [True]

    argv = ["--url", big.source, "export", "a", "b", "z", "-o", str(out)]
    code, err = signalled(argv, INSIDE_Z, sig, begun)
    assert not out.exists(), "a partial export is never under the name asked for"
    if sig != signal.SIGKILL:
        assert code == 130, err  # SIGTERM went through the CLI's handler
        assert f"nothing was written to {out}" in err
        assert partials() == []
        return
    assert code == -signal.SIGKILL
    (remains,) = partials()
    assert remains.name.startswith(".threads.jsonl.")
    assert remains.stat().st_mode & 0o777 == 0o600
    # What stdout got from an export killed as it wrote, beside it.
    piped = tmp_path / "piped.jsonl"

    def reached() -> None:  # z written up to its last record: most of it on disk
        assert piped.stat().st_size > 0

    with piped.open("w") as fp:
        argv = ["--url", big.source, "export", "z", "-o", "-"]
        code, err = signalled(argv, COUNTS["z"], signal.SIGKILL, reached, fp)
    assert code == -signal.SIGKILL, err
    for target in TARGETS:
        url = new_url(target, f"target-{target}")
        for name in (remains, piped):
            done = cli("import", str(name), "--url", url)
            assert done.returncode == 1, (target, done.stderr)
            assert "the export was interrupted or the file cut" in done.stderr
            assert "nothing was imported" in done.stderr
        with our_saver(url) as dst:
            assert held(dst) == {}, target
