"""The plans layer: each saver method's steps, written once for both doors.

A plan is a generator: it checks and encodes the call's arguments (:mod:`.._codec`), yields
each operation of :mod:`.._ops` to run (or another step of :mod:`.._engine.steps`, such as a
pause), receives what it returned, and returns the method's result. The saver's sync
methods drive a plan with ``Runner.drive``, its async methods with ``Runner.adrive``
(:mod:`.._engine.runner`). :mod:`.methods` holds the saver's methods, :mod:`.browse` the
plan of ``list_threads`` (which the CLI runs without a saver), :mod:`.locks` the plans of
``lock_thread``.

May import: :mod:`.._ops`, :mod:`.._engine`, :mod:`..dialects`, :mod:`.._codec`,
:mod:`..schema`, :mod:`..errors`. Never the saver, the transfer or the CLI.
"""
