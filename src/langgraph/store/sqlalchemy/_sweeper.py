"""The TTL sweepers of the store: a daemon thread and an asyncio task that delete expired
items every interval, as LangGraph's ``SqliteStore``/``PostgresStore`` offer.

:class:`TTLSweepers` is a mixin of :class:`~.store.SQLAlchemyStore`, which provides the
sweep itself (``sweep_ttl``, ``asweep_ttl``) and the ``ttl_config``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
from typing import Any

__all__ = ["TTLSweepers"]

log = logging.getLogger("langgraph.store.sqlalchemy")


class TTLSweepers:
    """Start and stop the periodic TTL sweep, from sync code (a thread) or async code
    (a task on the running loop)."""

    ttl_config: Any
    _sweeper: threading.Thread | None = None
    _sweeper_stop: threading.Event
    _asweeper: asyncio.Task[None] | None = None

    def sweep_ttl(self) -> int:  # provided by the store
        raise NotImplementedError

    async def asweep_ttl(self) -> int:  # provided by the store
        raise NotImplementedError

    def _interval(self, minutes: float | None) -> float:
        value = minutes or (self.ttl_config or {}).get("sweep_interval_minutes") or 5
        if not value > 0:
            raise ValueError(f"sweep_interval_minutes must be > 0, not {value!r}")
        return float(value) * 60.0

    def start_ttl_sweeper(
        self, sweep_interval_minutes: float | None = None
    ) -> concurrent.futures.Future[None]:
        """Start a daemon thread that runs :meth:`sweep_ttl` every interval (the argument,
        else ``ttl["sweep_interval_minutes"]``, else 5 minutes) until
        :meth:`stop_ttl_sweeper` or :meth:`close`. A sweep that fails is logged and
        retried at the next interval.

        Returns:
            A future that completes when the thread stops (cancelling it stops it).
        """
        interval = self._interval(sweep_interval_minutes)
        done: concurrent.futures.Future[None] = concurrent.futures.Future()
        if self._sweeper is not None and self._sweeper.is_alive():
            done.set_result(None)
            return done
        stop = self._sweeper_stop = threading.Event()

        def loop() -> None:
            try:
                while not stop.wait(interval):
                    try:
                        deleted = self.sweep_ttl()
                        if deleted:
                            log.info("TTL sweep deleted %d expired items", deleted)
                    except Exception:
                        log.exception("TTL sweep failed; retrying at the next interval")
            finally:
                if not done.done():
                    done.set_result(None)

        done.add_done_callback(lambda f: stop.set() if f.cancelled() else None)
        self._sweeper = threading.Thread(target=loop, name="lgsa-ttl-sweeper", daemon=True)
        self._sweeper.start()
        return done

    def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Stop the sweeper thread.

        Args:
            timeout: Seconds to wait for it to end (None: as long as it takes).

        Returns:
            Whether it has stopped (True when none ran).
        """
        self._sweeper_stop.set()
        thread = self._sweeper
        if thread is None:
            return True
        if thread is not threading.current_thread():
            thread.join(timeout)
        if thread.is_alive():
            return False
        self._sweeper = None
        return True

    async def astart_ttl_sweeper(
        self, sweep_interval_minutes: float | None = None
    ) -> asyncio.Task[None]:
        """Start an asyncio task on the running loop that runs :meth:`asweep_ttl` every
        interval (as :meth:`start_ttl_sweeper`) until :meth:`astop_ttl_sweeper` or
        :meth:`aclose`.

        Returns:
            The task.
        """
        interval = self._interval(sweep_interval_minutes)
        if self._asweeper is not None and not self._asweeper.done():
            return self._asweeper

        async def loop() -> None:
            while True:
                await asyncio.sleep(interval)
                try:
                    deleted = await self.asweep_ttl()
                    if deleted:
                        log.info("TTL sweep deleted %d expired items", deleted)
                except Exception:
                    log.exception("TTL sweep failed; retrying at the next interval")

        self._asweeper = asyncio.get_running_loop().create_task(loop(), name="lgsa-ttl-sweeper")
        return self._asweeper

    async def astop_ttl_sweeper(self) -> bool:
        """Stop the asyncio sweeper task.

        Returns:
            Whether it has stopped (True when none ran).
        """
        task, self._asweeper = self._asweeper, None
        if task is None or task.done():
            return True
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            pass
        except RuntimeError:  # the task belongs to another loop
            return False
        return True
