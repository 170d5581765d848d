"""The transfer layer: what :mod:`..transfer` moves and how it reads and writes it.

Sources opened by URL, ours or an official saver's (:mod:`.sources`, :mod:`.kinds`), the
writing of copied threads into a saver (:mod:`.writing`), what our tables already hold of
a copied thread (:mod:`.held`) and the versioned export file
(:mod:`.jsonl`, :mod:`.exportfile`).

May import: the saver (:mod:`..saver`) and everything below it. Never the CLI.
"""
