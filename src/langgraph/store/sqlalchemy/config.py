"""A store's ``index``, ``ttl`` and ``indexed_fields`` configs read from JSON, strictly:
the LangGraph server's ``LANGGRAPH_STORE`` environment variable (the ``store`` section of
``langgraph.json``) and the command line's ``store copy --index``.

A value of the wrong type is an error that names it, before anything is opened; keys
this store does not use (``path``) are ignored; ``ann_index_config`` is checked as the
store checks it.

Trust: the config is the operator's, as ``langgraph.json`` is. An ``embed`` of the form
``path/to/file.py:function`` imports and runs that file, as the LangGraph server's own
store does; so every other part of the config (``dims``, ``fields``, the whole ``ttl``)
is checked first, and the file is imported last, only when nothing else is wrong.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import re
from typing import Any, cast

from langgraph.store.base import IndexConfig, TTLConfig

from langgraph.checkpoint.sqlalchemy.dialects._json_filters import check_indexed_field
from langgraph.store.sqlalchemy.vectors import DISTANCES, ann_params, field_paths

__all__ = [
    "STORE_ENV",
    "index_config",
    "indexed_fields_from_env",
    "store_config_from_env",
    "ttl_config",
]


#: The LangGraph server passes the ``store`` section of ``langgraph.json`` as JSON here.
STORE_ENV = "LANGGRAPH_STORE"


def _number(value: Any, what: str, *, whole: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{what} must be a number, not {value!r}")
    if whole and not isinstance(value, int):
        raise ValueError(f"{what} must be a whole number, not {value!r}")
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{what} must be > 0, not {value!r}")
    return value


#: ``./path/to/file.py:function``: an embedding function in a Python file, as the
#: LangGraph server's own store reads ``embed``.
_FILE_FUNCTION = re.compile(r"^(?P<path>.+\.py):(?P<name>[A-Za-z_][A-Za-z0-9_]*)$")


def _embed(embed: str, where: str) -> Any:
    """``embed`` as ``IndexConfig`` takes it: a model name (``provider:model``) as it
    is, or the function that ``path/to/file.py:name`` names (relative to the working
    directory), imported from that file.

    Raises:
        ValueError: No such file, or no callable of that name in it.
    """
    match = _FILE_FUNCTION.match(embed.strip())
    if match is None:
        return embed
    path = os.path.abspath(match["path"])
    if not os.path.isfile(path):
        raise ValueError(f"{where}: no such file {path}")
    spec = importlib.util.spec_from_file_location(f"_lgsa_embed_{abs(hash(path))}", path)
    if spec is None or spec.loader is None:  # pragma: no cover - a .py file always has one
        raise ValueError(f"{where}: cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    function = getattr(module, match["name"], None)
    if not callable(function):
        raise ValueError(f"{where}: {path} has no function {match['name']!r}")
    return function


def _index_checked(data: Any, where: str) -> dict[str, Any] | None:
    """``data`` checked as an index config, ``embed`` left as the text it is."""
    if data is None:
        return None
    if not isinstance(data, dict):
        raise ValueError(f"{where} must be a JSON object, not {data!r}")
    dims = _number(data.get("dims"), f"{where}['dims']", whole=True)
    embed = data.get("embed")
    if not isinstance(embed, str) or not embed.strip():
        raise ValueError(
            f"{where}['embed'] must name an embedding model (e.g. "
            f"'openai:text-embedding-3-small'), not {embed!r}"
        )
    config: dict[str, Any] = {"dims": int(dims), "embed": embed}
    for name in ("fields", "text_fields"):  # text_fields: SqliteStore's name for fields
        fields = data.get(name)
        if fields is not None:
            if not isinstance(fields, list) or not all(isinstance(f, str) and f for f in fields):
                raise ValueError(f"{where}[{name!r}] must be a list of field paths, not {fields!r}")
            config[name] = fields
    try:
        field_paths(config)
    except ValueError as e:
        raise ValueError(f"{where}: {e}") from None
    distance = data.get("distance_type")
    if distance is not None:
        if distance not in DISTANCES:
            raise ValueError(
                f"{where}['distance_type'] must be one of {', '.join(DISTANCES)}, not {distance!r}"
            )
        config["distance_type"] = distance
    ann = data.get("ann_index_config")
    if ann is not None:
        try:
            ann_params(ann)
        except ValueError as e:
            raise ValueError(f"{where}: {e}") from None
        config["ann_index_config"] = ann
    return config


def _index_resolved(config: dict[str, Any] | None, where: str) -> IndexConfig | None:
    """A checked index config with its ``embed`` resolved (a file imported: last)."""
    if config is None:
        return None
    return cast(IndexConfig, {**config, "embed": _embed(config["embed"], f"{where}['embed']")})


def index_config(data: Any, where: str) -> IndexConfig | None:
    """``data`` (parsed JSON) as an ``IndexConfig``: ``{"dims": int, "embed": "provider:model",
    "fields": ["path", ...], "distance_type": "cosine" | "l2" | "inner_product",
    "ann_index_config": {"kind": "hnsw", "m": 16, ...}}``
    (``text_fields``, ``SqliteStore``'s name, for ``fields``); None for None. ``embed`` may also be
    ``"./path/to/file.py:function"``: that file is imported (it is the operator's code,
    as the store's own ``path``) and the function is the embedding; the file is imported
    only after every other key has been checked.

    Args:
        data: The parsed JSON.
        where: Where it comes from, for the error (``LANGGRAPH_STORE["index"]``).

    Raises:
        ValueError: Not such an object.
    """
    return _index_resolved(_index_checked(data, where), where)


def ttl_config(data: Any, where: str) -> TTLConfig | None:
    """``data`` (parsed JSON) as a ``TTLConfig``: ``{"default_ttl": minutes,
    "refresh_on_read": bool, "omit_expired": bool, "sweep_interval_minutes": int}``; None
    for None.

    Raises:
        ValueError: Not such an object.
    """
    if data is None:
        return None
    if not isinstance(data, dict):
        raise ValueError(f"{where} must be a JSON object, not {data!r}")
    config: dict[str, Any] = {}
    if data.get("default_ttl") is not None:
        config["default_ttl"] = _number(data["default_ttl"], f"{where}['default_ttl']")
    for name in ("refresh_on_read", "omit_expired"):
        if name in data:
            flag = data[name]
            if not isinstance(flag, bool):
                raise ValueError(f"{where}[{name!r}] must be true or false, not {flag!r}")
            config[name] = flag
    if data.get("sweep_interval_minutes") is not None:
        config["sweep_interval_minutes"] = int(
            _number(
                data["sweep_interval_minutes"], f"{where}['sweep_interval_minutes']", whole=True
            )
        )
    return cast(TTLConfig, config)


def store_config_from_env() -> tuple[IndexConfig | None, TTLConfig | None]:
    """The ``index`` and ``ttl`` of ``$LANGGRAPH_STORE`` (unset or empty: neither). Both
    are checked before an ``embed`` file is imported.

    Raises:
        ValueError: Not a JSON object, or an ``index`` or ``ttl`` of the wrong shape.
    """
    text = os.environ.get(STORE_ENV, "").strip()
    if not text:
        return None, None
    try:
        data = json.loads(text)
    except ValueError as e:
        raise ValueError(f"{STORE_ENV} is not JSON: {e}") from None
    if not isinstance(data, dict):
        raise ValueError(f"{STORE_ENV} must be a JSON object, not {data!r}")
    where = f"{STORE_ENV}['index']"
    index = _index_checked(data.get("index"), where)
    ttl = ttl_config(data.get("ttl"), f"{STORE_ENV}['ttl']")
    # Only now, with the whole config checked, may an embedding file be imported.
    return _index_resolved(index, where), ttl


def indexed_fields_from_env() -> list[str] | None:
    """The ``indexed_fields`` of ``$LANGGRAPH_STORE`` (a list of top-level field names
    whose expression indexes the store's setup creates), or None.

    Raises:
        ValueError: Not a JSON object, or ``indexed_fields`` not a list of identifiers.
    """
    text = os.environ.get(STORE_ENV, "").strip()
    if not text:
        return None
    try:
        data = json.loads(text)
    except ValueError as e:
        raise ValueError(f"{STORE_ENV} is not JSON: {e}") from None
    if not isinstance(data, dict):
        raise ValueError(f"{STORE_ENV} must be a JSON object, not {data!r}")
    fields = data.get("indexed_fields")
    if fields is None:
        return None
    if not isinstance(fields, list):
        raise ValueError(f"{STORE_ENV}['indexed_fields'] must be a list, not {fields!r}")
    return [check_indexed_field(f) for f in fields]
