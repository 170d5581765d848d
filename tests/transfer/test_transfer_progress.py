"""The ``progress`` callbacks of ``export_threads`` and ``import_threads`` count the
checkpoints, up to the totals a caller can know beforehand (``count_checkpoints``,
``import_plan``): export one call a checkpoint written; import one a checkpoint of the
file handled, stored or skipped as present. On every backend.
"""

from __future__ import annotations

import io

from langgraph.checkpoint.sqlalchemy import SQLAlchemySaver
from langgraph.checkpoint.sqlalchemy.transfer import (
    count_checkpoints,
    export_threads,
    import_plan,
    import_threads,
)

from ..checkpoints import put_numbered_chain


def fill(saver: SQLAlchemySaver, threads: int, per_thread: int, ns: str = "") -> None:
    for t in range(threads):
        put_numbered_chain(
            saver,
            {"configurable": {"thread_id": f"t{t}", "checkpoint_ns": ns}},
            per_thread,
            lambda step: {"source": "loop", "step": step},
        )


def test_export_tells_each_checkpoint_written(saver: SQLAlchemySaver) -> None:
    fill(saver, 3, 2)
    fill(saver, 1, 3, ns="child:1")
    assert count_checkpoints(saver) == 9
    assert count_checkpoints(saver, ["t0", "t2"]) == 7
    seen: list[int] = []
    out = io.StringIO()
    report = export_threads(saver, ["t0", "t2"], out, progress=seen.append)
    assert report.checkpoints == 7 and seen == list(range(1, 8))
    seen.clear()
    export_threads(saver, None, io.StringIO(), progress=seen.append)
    assert seen == list(range(1, 10))


def test_import_tells_the_file_checkpoints_handled_stored_or_skipped(
    saver: SQLAlchemySaver,
) -> None:
    fill(saver, 2, 3)
    dump = io.StringIO()
    export_threads(saver, None, dump)
    for thread_id in ("t0", "t1"):
        saver.delete_thread(thread_id)
    dump.seek(0)
    assert import_plan(dump) == {"t0": 3, "t1": 3}
    seen: list[int] = []
    report = import_threads(saver, dump, thread_ids=["t1"], progress=seen.append)
    assert report.checkpoints_imported == 3
    assert seen[-1] == 3 and seen == sorted(seen) and set(seen) == {1, 2, 3}
    # again, every thread: t1's 3 checkpoints are skipped as present, t0's stored
    dump.seek(0)
    seen.clear()
    report = import_threads(saver, dump, progress=seen.append)
    assert (report.checkpoints_imported, report.checkpoints_skipped) == (3, 3)
    assert seen[-1] == 6 and seen == sorted(seen) and 3 in seen
