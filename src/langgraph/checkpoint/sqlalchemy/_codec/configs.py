"""Arguments and configs checked as the saver's methods take them, in one place.

Ids as text the databases can store, a config's thread, namespace and checkpoint,
channel names, counts and the page of ``list_threads``, and the saver's own options
(:func:`saver_options`, :func:`check_on_retry`). Pure Python (the typed errors, the
schema's limits): the codec (:mod:`._codec.rows`) and the plans check a call with these
before any query runs, and the command line's ``threads list`` checks its page with them
without importing LangGraph.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Collection, Sequence
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, cast

from langgraph.checkpoint.sqlalchemy._codec.metakeys import checked_keys
from langgraph.checkpoint.sqlalchemy._codec.threadinfo import id_at
from langgraph.checkpoint.sqlalchemy.errors import (
    CheckpointClockSkewError,
    CheckpointConfigError,
    RetryEvent,
)
from langgraph.checkpoint.sqlalchemy.schema import (
    CHANNEL_MAX_LENGTH,
    CHECKPOINT_NS_MAX_LENGTH,
    ID_MAX_LENGTH,
    THREAD_ID_MAX_LENGTH,
    run_key,
    utf8_encodable,
)

if TYPE_CHECKING:  # types only: ``threads list`` checks its page without LangGraph
    from langchain_core.runnables import RunnableConfig
    from langgraph.checkpoint.base import Checkpoint

__all__ = [
    "MAX_COUNT",
    "ConfigMetadata",
    "OnRetry",
    "SaverOptions",
    "check_channel",
    "check_child_order",
    "check_count",
    "check_inline_limit",
    "check_on_retry",
    "check_stored_channel",
    "check_text",
    "checkpoint_config",
    "checkpoint_key",
    "config_metadata_keys",
    "configurable",
    "id_list",
    "namespace",
    "own_id",
    "run_keys",
    "saver_options",
    "text_id",
    "thread",
    "thread_page",
]


def text_id(value: Any, name: str, limit: int, *, required: bool) -> str | None:
    """``config['configurable'][name]`` as text, checked: a string (or int/UUID) of at
    most ``limit`` characters that databases can store; None when empty and optional.

    Raises:
        CheckpointConfigError: Missing though required, of another type, too long, or
            holding a NUL or a lone surrogate.
    """
    if value is None or value == "":
        if required:
            raise CheckpointConfigError(
                f"config['configurable']['{name}'] is required: pass "
                f"{{'configurable': {{'{name}': ...}}}} when you invoke the graph."
            )
        return None
    if isinstance(value, bool) or not isinstance(value, (str, int, uuid.UUID)):
        raise CheckpointConfigError(
            f"config['configurable']['{name}'] must be a string (or int/UUID), got "
            f"{type(value).__name__}."
        )
    text = check_text(str(value), name)
    if len(text) > limit:
        raise CheckpointConfigError(
            f"config['configurable']['{name}'] is {len(text)} characters long; the limit "
            f"is {limit}. Use a shorter id (for example a hash of it)."
        )
    return text


def check_text(text: str, name: str) -> str:
    """``text`` if databases can store it: no NUL, no lone surrogate.

    Raises:
        CheckpointConfigError: It holds either.
    """
    if "\x00" in text:
        raise CheckpointConfigError(
            f"config['configurable']['{name}'] contains a NUL character, which databases "
            "cannot store in text columns; remove it."
        )
    if not utf8_encodable(text):
        raise CheckpointConfigError(
            f"config['configurable']['{name}'] is not valid Unicode (it holds a lone "
            "surrogate); pass a proper string."
        )
    return text


def thread(value: Any) -> str:
    """A ``thread_id`` argument, checked as in a config."""
    return cast(str, text_id(value, "thread_id", THREAD_ID_MAX_LENGTH, required=True))


#: The largest count a database takes as a LIMIT or OFFSET (a signed 64-bit integer).
MAX_COUNT = 2**63 - 1


def check_count(name: str, value: object, *, none: bool) -> None:
    """Check a ``limit`` or ``offset`` argument: an int from 0 to :data:`MAX_COUNT` (or
    None when ``none``).

    Raises:
        ValueError: Not an int, negative, or over :data:`MAX_COUNT` (a database would
            answer with a raw overflow error).
    """
    if value is None and none:
        return
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_COUNT:
        allowed = "None or an int" if none else "an int"
        raise ValueError(f"{name} must be {allowed} from 0 to 2**63 - 1, got {value!r}")


def thread_page(
    limit: int | None, offset: int, idle_for: timedelta | None
) -> tuple[int | None, int, str | None]:
    """``(limit, offset, newest id allowed)`` of ``list_threads``, checked.

    Raises:
        ValueError: ``limit`` or ``offset`` not an int from 0 to 2**63 - 1.
    """
    check_count("limit", limit, none=True)
    check_count("offset", offset, none=False)
    cutoff = None
    if idle_for is not None:
        try:
            since = datetime.now(timezone.utc) - idle_for
        except OverflowError:  # idle for longer than datetime reaches: no thread is
            since = datetime.min.replace(tzinfo=timezone.utc)
        cutoff = id_at(since)
    return limit, offset, cutoff


def check_channel(channel: str) -> None:
    """Refuse a channel name databases cannot store.

    Raises:
        CheckpointConfigError: Not a string, or holding a NUL or a lone surrogate.
    """
    # As for ids: PostgreSQL text (and JSONB keys) cannot hold NUL, and no driver encodes
    # a lone surrogate; refuse both on every dialect rather than fail with a driver error
    # on some and store on others.
    if not isinstance(channel, str):
        raise CheckpointConfigError(f"channel names must be strings, got {type(channel).__name__}.")
    if "\x00" in channel or not utf8_encodable(channel):
        raise CheckpointConfigError(
            f"channel name {channel[:40]!r} contains a NUL character or a lone surrogate, "
            "which databases cannot store; rename the channel."
        )


def namespace(value: Any) -> str:
    """A ``checkpoint_ns``, checked; None is ``""``.

    Raises:
        CheckpointConfigError: Not a string, unstorable text, or longer than the column.
    """
    if value is None:
        return ""
    if not isinstance(value, str):
        raise CheckpointConfigError(
            f"config['configurable']['checkpoint_ns'] must be a string, got {type(value).__name__}."
        )
    check_text(value, "checkpoint_ns")
    if len(value) > CHECKPOINT_NS_MAX_LENGTH:
        raise CheckpointConfigError(
            f"checkpoint_ns is {len(value)} characters long; the limit is "
            f"{CHECKPOINT_NS_MAX_LENGTH} (subgraphs nested too deep to store)."
        )
    return value


def configurable(config: RunnableConfig | None) -> dict[str, Any]:
    """``config['configurable']`` (``{}`` when absent).

    Raises:
        CheckpointConfigError: ``config`` or its ``configurable`` is not a dict.
    """
    if not isinstance(config, dict):
        raise CheckpointConfigError(f"config must be a dict, got {type(config).__name__}.")
    found = config.get("configurable")
    if found is None:
        return {}
    if not isinstance(found, dict):
        raise CheckpointConfigError("config['configurable'] must be a dict.")
    return found


def checkpoint_key(config: RunnableConfig) -> tuple[str, str, str | None]:
    """``(thread_id, checkpoint_ns, checkpoint_id or None)`` of a config (LangGraph rules:
    thread_id required; checkpoint_ns defaults to ""; an empty checkpoint_id means latest).
    """
    c = configurable(config)
    thread_id = text_id(c.get("thread_id"), "thread_id", THREAD_ID_MAX_LENGTH, required=True)
    checkpoint_id = text_id(c.get("checkpoint_id"), "checkpoint_id", ID_MAX_LENGTH, required=False)
    return cast(str, thread_id), namespace(c.get("checkpoint_ns")), checkpoint_id


def checkpoint_config(thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> RunnableConfig:
    """The config of one checkpoint."""
    return {
        "configurable": {
            "thread_id": thread_id,
            "checkpoint_ns": checkpoint_ns,
            "checkpoint_id": checkpoint_id,
        }
    }


def id_list(values: Sequence[str], name: str) -> list[str]:
    """A list of ids as strings.

    Raises:
        TypeError: ``values`` is a bare string (a list of its characters was not meant).
    """
    if isinstance(values, (str, bytes)):
        raise TypeError(f"{name} must be a list of ids, not a single string: use [{values!r}]")
    return [str(v) for v in values]


def run_keys(run_ids: Sequence[str]) -> list[str]:
    """The ``run_id`` column values of run ids (:func:`.schema.run_key`).

    Raises:
        TypeError: ``run_ids`` is a bare string.
    """
    if isinstance(run_ids, (str, bytes)):
        raise TypeError(f"run_ids must be a list of ids, not a single string: use [{run_ids!r}]")
    return [k for k in (run_key(r) for r in run_ids) if k is not None]


def check_inline_limit(value: Any) -> int:
    """The saver's ``inline_limit``, checked.

    Raises:
        ValueError: Not an int from 0 to :data:`._codec.inline.INLINE_VALUE_LIMIT`.
    """
    # Here, not at the top: the inline format needs ormsgpack, which ``threads list``
    # (a user of this module's other checks) never loads.
    from langgraph.checkpoint.sqlalchemy._codec.inline import INLINE_VALUE_LIMIT

    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"inline_limit must be an int (bytes), got {value!r}")
    if not 0 <= value <= INLINE_VALUE_LIMIT:
        raise ValueError(f"inline_limit must be from 0 to {INLINE_VALUE_LIMIT} bytes, got {value}")
    return value


def own_id(checkpoint: Checkpoint, parent_id: str | None) -> str:
    """A checkpoint's own ``id``, checked, and not its parent's.

    Raises:
        CheckpointConfigError: A bad id, or the parent's.
    """
    checkpoint_id = text_id(checkpoint.get("id"), "id", ID_MAX_LENGTH, required=True)
    assert checkpoint_id is not None
    if checkpoint_id == parent_id:
        raise CheckpointConfigError(
            f"checkpoint {checkpoint_id!r} names itself as its parent "
            "(config['configurable']['checkpoint_id']); pass the parent's id."
        )
    return checkpoint_id


#: A time-ordered UUID (version 6 or 7) as text: such ids sort by time, byte for byte and
#: in every database's collation (same dashes, lower-case hex).
_TIME_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[67][0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}$")


def check_child_order(checkpoint_id: str, parent_id: str | None) -> None:
    """Refuse a checkpoint that would sort at or below its parent (clock skew).

    Only for time-ordered UUIDs on both sides (LangGraph's own ids): other ids carry no
    order the saver could check.

    Raises:
        CheckpointClockSkewError: ``checkpoint_id`` sorts before ``parent_id``.
    """
    if (
        parent_id
        and checkpoint_id < parent_id
        and _TIME_UUID.match(checkpoint_id)
        and _TIME_UUID.match(parent_id)
    ):
        raise CheckpointClockSkewError(checkpoint_id, parent_id)


#: Which keys of ``config["metadata"]`` and ``config["configurable"]`` LangGraph's
#: ``get_checkpoint_metadata`` may copy into stored metadata: True all (its default),
#: else these (none: only the metadata passed to ``put``).
ConfigMetadata = Literal[True] | frozenset[str]


def config_metadata_keys(value: object) -> ConfigMetadata:
    """The saver's ``config_metadata`` argument checked: True, False (no key) or a
    collection of key names.

    Raises:
        ValueError: Anything else (a single string too: name its keys in a list).
    """
    if value is True:
        return True
    if value is False:
        return frozenset()
    if isinstance(value, Collection) and not isinstance(value, (str, bytes)):
        keys = frozenset(value)
        if all(isinstance(k, str) for k in keys):
            return keys
    raise ValueError(
        "config_metadata must be True (copy config['metadata'] and scalar "
        "config['configurable'] values into checkpoint metadata, LangGraph's default), "
        f"False (copy none) or a list of the keys to copy, not {value!r}"
    )


def check_stored_channel(channel: str) -> None:
    """:func:`check_channel`, and no longer than the blobs table's column.

    Raises:
        CheckpointConfigError: Unstorable or too long.
    """
    check_channel(channel)
    if len(channel) > CHANNEL_MAX_LENGTH:
        raise CheckpointConfigError(
            f"channel name {channel[:40]!r}... is {len(channel)} characters long; "
            f"the limit is {CHANNEL_MAX_LENGTH}."
        )


class SaverOptions(NamedTuple):
    """The saver's options the codec takes, checked (:func:`saver_options`)."""

    inline_limit: int
    config_metadata: ConfigMetadata
    index_keys: tuple[str, ...]


def saver_options(
    inline_limit: Any,
    config_metadata: object,
    metadata_index_keys: Collection[str] | None,
    retry_timeout: float,
) -> SaverOptions:
    """The saver's ``inline_limit``, ``config_metadata``, ``metadata_index_keys`` and
    ``retry_timeout`` checked: by its constructor, and by ``from_conn_string`` before any
    engine is made.

    Raises:
        ValueError: ``inline_limit`` out of range, ``config_metadata`` not a bool or a
            list of key names, an index key that cannot be indexed, or a negative
            ``retry_timeout``.
        TypeError: ``metadata_index_keys`` is a bare string or holds a non-string.
    """
    limit = check_inline_limit(inline_limit)
    keys = config_metadata_keys(config_metadata)
    options = SaverOptions(limit, keys, checked_keys(metadata_index_keys))
    if not retry_timeout >= 0:
        raise ValueError(f"retry_timeout must be a number of seconds >= 0, not {retry_timeout!r}")
    return options


#: The ``on_retry`` callback of the saver and the store: given a :class:`RetryEvent`
#: for each retried failure; what it returns is ignored.
OnRetry = Callable[[RetryEvent], object]


def check_on_retry(on_retry: object) -> OnRetry | None:
    """The ``on_retry`` argument of the saver and the store checked: a callable or None
    (by their constructors, and by ``from_conn_string`` before any engine is made).

    Raises:
        TypeError: ``on_retry`` is neither callable nor None.
    """
    if on_retry is None or callable(on_retry):
        return on_retry
    raise TypeError(
        "on_retry must be a callable taking a RetryEvent (called at each retried "
        f"failure), or None, not {type(on_retry).__name__} {on_retry!r:.60}"
    )
