"""The operations layer: SQL on one ``Connection``, each written once.

Every function takes a sync ``Connection`` inside the caller's transaction and moves rows:
checkpoints, values and pending writes (:mod:`.checkpoints`), delta-channel history
(:mod:`.history`), pages of ``list()`` (:mod:`.listing`), threads: prune, copy, delete
(:mod:`.threads`), browsing and storage totals (:mod:`.browse`), thread leases
(:mod:`.locks`) and the metadata index (:mod:`.metaindex`). A runner of :mod:`.._engine`
runs them on the sync engine or through ``run_sync`` on the async one.

May import: :mod:`.._engine` (the cursor executor only), :mod:`..dialects`,
:mod:`.._codec`, :mod:`..schema`, :mod:`..errors`. Never a plan or the saver.
"""
