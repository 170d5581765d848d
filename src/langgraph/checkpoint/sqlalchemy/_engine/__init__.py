"""The engine layer: how a saver or a store reaches its database.

URLs and their defaults (:mod:`.defaults`, :mod:`.conninfo`, :mod:`.engines`) and each
engine's share of the connection arguments (:mod:`.arguments`), the sync and
async runners that drive an operation or a plan through a door (:mod:`.doors`,
:mod:`.runner`), the steps of a plan that are not database operations (:mod:`.steps`:
pauses, blocking calls, embedding calls, performed the way each door does them), retries
through transient failures (:mod:`.retry`), the engines shared by the owners built for one
database (:mod:`.shared`), the lifecycle owners share (:mod:`.owner`) and the statements run
straight on the DBAPI cursor (:mod:`.cursor`).

May import: :mod:`..migrate`, :mod:`..dialects`, :mod:`.._codec`, :mod:`..schema`,
:mod:`..errors`. Never an operation, a plan, the saver or the store: operations are
handed to a runner as functions.
"""
