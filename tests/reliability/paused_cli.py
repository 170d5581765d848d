"""The real command line, paused at a known point of a transfer until a signal ends it.

Test-side only (never product code): how ``test_transfer_interrupted.py`` signals the
CLI while it is provably inside a thread's transaction, instead of after a sleep that
a busy machine turns into "after the command had finished"::

    python paused_cli.py AT READY HOLD CLI-ARGUMENT...

It runs ``langgraph.checkpoint.sqlalchemy.cli.main(CLI-ARGUMENT...)`` and exits with its
code, as ``python -m langgraph.checkpoint.sqlalchemy`` does. The CLI gives its transfer
calls a ``progress`` callback only when it shows a progress bar (a terminal), so the
public transfer functions the commands call (``transfer.copy_threads``,
``import_threads``, ``export_threads``) are wrapped here, in this process only, to add
a hook to the ``progress`` callback they are given (documented: called inside the
thread's transaction for ``copy`` and ``import``, after each line written for
``export``). When the count of checkpoints handled first reaches ``AT``, the hook writes
``paused at AT`` on the file descriptor ``READY`` and then waits on ``HOLD``, the read
end of a pipe the test never writes to, until a signal arrives. No signal handler of
the CLI is replaced: SIGTERM is the CLI's own (``copy``, ``import`` and ``export`` turn
it into an interruption), SIGINT Python's (Ctrl-C: ``KeyboardInterrupt``), and SIGKILL
kills. Only a SIGINT inherited as ignored (the tests run as a background job of a
non-interactive shell: ``pytest ... &`` in a script) is given back Python's handler,
which Python installs itself otherwise, as a terminal's Ctrl-C finds it.

If the test goes away without signalling (its end of ``HOLD`` closed), the CLI is ended
as an error, inside the transaction: nothing is left running.
"""

from __future__ import annotations

import functools
import os
import select
import signal
import sys
import threading
from collections.abc import Callable
from typing import Any

from langgraph.checkpoint.sqlalchemy import transfer
from langgraph.checkpoint.sqlalchemy.cli import main

__all__ = ["pausing"]

#: The transfer functions the commands call, each with a ``progress`` keyword argument.
WRAPPED = ("copy_threads", "import_threads", "export_threads")


def hold(at: int, ready: int, hold_fd: int) -> None:
    """Say ``paused at AT`` on ``ready``, then wait on ``hold_fd`` until a signal's
    handler raises (or the signal kills the process). The wait wakes each second so that
    a signal arriving just before it blocks is still handled at once after."""
    if threading.current_thread() is not threading.main_thread():
        raise RuntimeError("paused_cli: progress reported off the main thread, no signal lands")
    os.write(ready, f"paused at {at}\n".encode())
    os.close(ready)
    while True:
        readable, _, _ = select.select([hold_fd], [], [], 1.0)
        if readable:  # end of file: the test closed its end without a signal
            raise SystemExit("paused_cli: the test went away before signalling")


def pausing(call: Callable[..., Any], at: int, ready: int, hold_fd: int) -> Callable[..., Any]:
    """``call`` (a transfer function), whose ``progress`` callback, the caller's if any,
    then :func:`hold` the first time it is told ``at`` checkpoints are handled."""

    @functools.wraps(call)
    def run(*args: Any, progress: Callable[[int], None] | None = None, **kwargs: Any) -> Any:
        paused: list[int] = []

        def told(done: int) -> None:
            if progress is not None:
                progress(done)
            if done == at and not paused:
                paused.append(done)
                hold(at, ready, hold_fd)

        return call(*args, progress=told, **kwargs)

    return run


if __name__ == "__main__":
    at, ready, hold_fd = (int(a) for a in sys.argv[1:4])
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    for name in WRAPPED:
        setattr(transfer, name, pausing(getattr(transfer, name), at, ready, hold_fd))
    raise SystemExit(main(sys.argv[4:]))
