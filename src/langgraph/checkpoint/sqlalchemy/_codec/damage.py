"""What a row read back must look like: the checks that make a damaged or forged row a
``CheckpointDecodeError`` (``get_tuple``) or a logged skip (``list``), never a raw error.

Anyone who can write to the tables can put anything the database takes into any column:
JSON of another shape, text where ids were (SQLite stores any type in any column),
bytes that are not UTF-8 (MariaDB's binary key columns). The JSON columns are parsed by
:class:`.schema.JsonRead`, which never raises; these checks then look at the shapes,
before anything is bound again or decoded. Type checks only, cheap on the hot path.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langgraph.checkpoint.sqlalchemy.schema import Undecodable, utf8_encodable

__all__ = ["checked_versions", "row_damage", "sane_text", "write_damage"]


def sane_text(value: object) -> bool:
    """Whether ``value`` is text the databases can store and bind again: a ``str``
    without NUL or lone surrogate (what a forged row's bytes read back as)."""
    return isinstance(value, str) and "\x00" not in value and utf8_encodable(value)


def _all_sane(texts: Any) -> bool:
    """Whether every item of ``texts`` is :func:`sane_text`: one join and one check of
    the joined text (a row's few ids and channels cost about a microsecond)."""
    try:
        return sane_text("".join(texts))
    except TypeError:  # an item that is not a str
        return False


def checked_versions(value: object) -> dict[str, str] | None:
    """``value_versions`` as read (:class:`.schema.JsonRead`) if it is what the saver
    writes, a JSON object of channel names to version strings; None otherwise (a
    damaged or forged row)."""
    if type(value) is not dict or not (_all_sane(value) and _all_sane(value.values())):
        return None
    return value


def _shape(value: object) -> str:
    if isinstance(value, Undecodable):
        return value.error
    return f"JSON {type(value).__name__}, not an object of the form the saver writes"


_IDS = ("thread_id", "checkpoint_ns", "checkpoint_id")
_OPTIONAL_IDS = ("thread_id_full", "checkpoint_ns_full", "parent_checkpoint_id")


def row_damage(row: Any) -> tuple[str, str] | None:
    """``(part, why)`` of the first column of a checkpoint row (:data:`CHECKPOINT_COLUMNS`)
    that is not what the saver writes, or None: ids that are not text, ``metadata`` that
    is not a JSON object, ``value_versions`` that is not ``{channel: version}`` text, a
    ``type`` or ``checkpoint`` of another type (SQLite stores anything in any column).
    Cheap: type checks and a check of the joined ids and channels."""
    ids = [getattr(row, part) for part in _IDS]
    ids.extend(v for part in _OPTIONAL_IDS if (v := getattr(row, part)) is not None)
    if not _all_sane(ids):
        for part in (*_IDS, *_OPTIONAL_IDS):
            value = getattr(row, part)
            if not (sane_text(value) or (value is None and part in _OPTIONAL_IDS)):
                return part, f"the {part} is not text without NUL ({type(value).__name__})"
    if type(row.metadata) is not dict:
        return "metadata", _shape(row.metadata)
    if checked_versions(row.value_versions) is None:
        return "value_versions", _shape(row.value_versions)
    if not isinstance(row.type, str):
        return "checkpoint", f"its type is {type(row.type).__name__}, not text"
    if not isinstance(row.checkpoint, (bytes, bytearray, memoryview)):
        return "checkpoint", f"it is {type(row.checkpoint).__name__}, not bytes"
    return None


def write_damage(write: Sequence[Any]) -> str | None:
    """Why a write as read, ``(task_id, task_path, idx, channel, type, blob)``, is not
    what the saver writes (a forged row), or None."""
    task_id, task_path, idx, channel, type_, _blob = write
    if not (_all_sane((task_id, channel)) and isinstance(task_path, str)):
        return "its task id, channel or task path is not text without NUL"
    if isinstance(idx, bool) or not isinstance(idx, int):
        return f"its idx is {type(idx).__name__}, not an integer"
    if not isinstance(type_, str):
        return "its type is not text"
    return None
