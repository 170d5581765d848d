"""The plans layer: each saver method's steps, written once for both doors.

A plan is a generator: it checks and encodes the call's arguments (:mod:`.._codec`), yields
each operation of :mod:`.._ops` to run, receives what it returned, and returns the
method's result. The saver's sync methods drive a plan with ``Runner.drive``, its async
methods with ``Runner.adrive`` (:mod:`.._engine.runner`).

May import: :mod:`.._ops`, :mod:`.._engine`, :mod:`..dialects`, :mod:`.._codec`,
:mod:`..schema`, :mod:`..errors`. Never the saver, the transfer or the CLI.
"""
