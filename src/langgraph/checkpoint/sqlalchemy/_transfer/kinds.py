"""What a transfer source may be (:data:`SourceKind`), re-exported by :mod:`._transfer.sources`
and :mod:`.transfer`.

A module of its own, with no import beyond ``typing``, so that the command line lists the
kinds (``copy --from-kind``) in its parser without importing the transfer machinery.
"""

from __future__ import annotations

from typing import Literal

__all__ = ["SourceKind"]

SourceKind = Literal["auto", "sqlalchemy", "sqlite", "postgres"]
"""What :func:`.transfer.open_source` reads: ``"auto"`` detects it from the tables present."""
