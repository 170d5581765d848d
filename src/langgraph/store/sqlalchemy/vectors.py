"""Semantic search of the store: which texts are embedded, how vectors are stored and scored.

As LangGraph's own stores do (``InMemoryStore``, ``SqliteStore``): a put embeds the text at
each field path of the index config (``fields``, or ``SqliteStore``'s ``text_fields``;
``"$"``: the whole value as JSON text; a path that finds several texts embeds each as
``path.i``), or at the put's own ``index`` paths, and ``index=False`` embeds nothing; a
query is embedded once per batch. An item's score is the best score of its fields, by the
index config's ``distance_type`` (:data:`DISTANCES`), with ``PostgresStore``'s formulas
(higher is closer):

* ``"cosine"`` (the default): the cosine similarity, ``1 - cosine distance`` (0.0 for a
  zero vector);
* ``"l2"``: minus the Euclidean distance;
* ``"inner_product"``: the dot product.

A vector is stored as little-endian float32 values (:func:`pack`), the format
``sqlite-vec`` reads: on SQLite with the extension loaded the database scores the rows
(:meth:`.QueryBuilder.vector_similarity`); elsewhere :func:`vector_scores` scores them in
batches, with NumPy when it is installed (``pip install
langgraph-checkpoint-sqlalchemy[vector]``), else in pure Python. Both compute the same
formulas.
"""

from __future__ import annotations

import json
import math
import sys
from array import array
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

from langchain_core.embeddings import Embeddings
from langgraph.store.base import IndexConfig
from langgraph.store.base.embed import ensure_embeddings, get_text_at_path, tokenize_path

from langgraph.checkpoint.sqlalchemy.dialects import HNSW_BOUNDS, AnnParams
from langgraph.store.sqlalchemy.tables import FIELD_MAX_LENGTH

__all__ = [
    "DISTANCES",
    "Distance",
    "IndexSpec",
    "ann_params",
    "field_name",
    "field_paths",
    "pack",
    "texts_to_embed",
    "unpack",
    "vector_scores",
]

Distance = Literal["cosine", "l2", "inner_product"]
#: The ``distance_type`` values of an index config, as ``PostgresStore`` takes them.
DISTANCES: tuple[Distance, ...] = ("cosine", "l2", "inner_product")


def field_name(name: str) -> str:
    """An embedded field's name (``path`` or ``path.i``) checked against the column.

    Raises:
        ValueError: Longer than :data:`.tables.FIELD_MAX_LENGTH` characters (names that
            only differed past it would collide).
    """
    if len(name) > FIELD_MAX_LENGTH:
        raise ValueError(
            f"the indexed field {name[:40]!r}... is {len(name)} characters long; the store "
            f"keeps field paths of at most {FIELD_MAX_LENGTH}. Index a shorter path."
        )
    return name


_BIG_ENDIAN = sys.byteorder == "big"


def pack(vector: Sequence[float], dims: int) -> bytes:
    """``vector`` as little-endian float32 bytes.

    Raises:
        ValueError: ``vector`` does not have ``dims`` values, or holds NaN or an
            infinite value (an embedding function's fault: say which).
    """
    values = array("f", [float(v) for v in vector])
    if len(values) != dims:
        raise ValueError(
            f"the embedding function returned a vector of {len(values)} values; the "
            f"store's index config says dims={dims}"
        )
    if not all(math.isfinite(v) for v in values):
        raise ValueError("the embedding function returned NaN or an infinite value")
    if _BIG_ENDIAN:
        values.byteswap()
    return values.tobytes()


def unpack(data: bytes) -> array[float]:
    """The float32 values of :func:`pack`'s bytes (a truncated blob loses its tail)."""
    values = array("f")
    values.frombytes(bytes(data)[: len(data) - len(data) % 4])
    if _BIG_ENDIAN:
        values.byteswap()
    return values


def field_paths(config: Mapping[str, Any]) -> list[str]:
    """The field paths an index config embeds: ``fields`` (``PostgresStore``'s and
    ``InMemoryStore``'s name) or ``text_fields`` (``SqliteStore``'s), a list or one path;
    ``["$"]`` (the whole value) when neither is given.

    Raises:
        ValueError: Both given and different, or not a list of non-empty strings.
    """
    fields, text_fields = config.get("fields"), config.get("text_fields")
    if fields is not None and text_fields is not None and fields != text_fields:
        raise ValueError(
            "index config gives 'fields' and 'text_fields' (SqliteStore's name for it) "
            f"with different paths ({fields!r}, {text_fields!r}): give one of them"
        )
    paths = fields if fields is not None else text_fields
    if isinstance(paths, str):
        paths = [paths]
    if paths is None or paths == []:
        return ["$"]
    if not isinstance(paths, (list, tuple)) or not all(isinstance(p, str) and p for p in paths):
        raise ValueError(f"index config 'fields' must be a list of field paths, not {paths!r}")
    return list(paths)


_ANN_KEYS = {"kind", "vector_type", "m", "ef_construction", "ef_search"}


def ann_params(config: Mapping[str, Any] | None) -> AnnParams:
    """An index config's ``ann_index_config`` checked: ``kind`` ``"hnsw"`` (the default,
    as ``PostgresStore``'s) or ``"flat"`` (no index), ``vector_type`` ``"vector"`` or
    ``"halfvec"``, and HNSW's ``m``, ``ef_construction`` and ``ef_search`` (integers
    within pgvector's bounds: ``m`` 2-100, ``ef_construction`` 4-1000 and at least twice
    ``m``, ``ef_search`` 1-1000; defaults 16, 128 (or twice a given ``m``) and 40:
    pgvector's, but ``ef_construction`` 128 for 64).

    Raises:
        ValueError: Another kind (``"ivfflat"`` is not supported: use ``"hnsw"``),
            another vector type, an unknown key or a parameter out of its bounds.
    """
    if config is None:
        return AnnParams()
    if not isinstance(config, Mapping):
        raise ValueError(f"index config 'ann_index_config' must be a dict, not {config!r}")
    unknown = sorted(set(config) - _ANN_KEYS)
    if unknown:
        raise ValueError(
            f"index config 'ann_index_config' has unknown keys {unknown}; it takes "
            f"{', '.join(sorted(_ANN_KEYS))}"
        )
    kind = config.get("kind", "hnsw")
    if kind not in ("hnsw", "flat"):
        raise ValueError(f"ann_index_config kind must be 'hnsw' or 'flat' (no index), not {kind!r}")
    vector_type = config.get("vector_type", "vector")
    if vector_type not in ("vector", "halfvec"):
        raise ValueError(
            "ann_index_config vector_type must be 'vector' or 'halfvec', not "
            f"{vector_type!r} (pgvector's 'bit' and 'sparsevec' are not supported)"
        )
    numbers = {}
    for name, (low, high) in HNSW_BOUNDS.items():
        if name not in config:
            continue
        value = config[name]
        if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
            raise ValueError(
                f"ann_index_config {name} must be an integer from {low} to {high} "
                f"(pgvector's bounds), not {value!r}"
            )
        numbers[name] = value
    if "m" in numbers and "ef_construction" not in numbers:
        numbers["ef_construction"] = max(AnnParams.ef_construction, 2 * numbers["m"])
    params = AnnParams(kind=str(kind), vector_type=str(vector_type), **numbers)
    if params.ef_construction < 2 * params.m:
        raise ValueError(
            f"ann_index_config ef_construction ({params.ef_construction}) must be at least "
            f"twice m ({params.m}), as pgvector requires"
        )
    return params


class IndexSpec:
    """A store's checked ``index`` config: dimensions, embeddings, field paths, distance.

    Args:
        config: LangGraph's ``IndexConfig`` (``dims``, ``embed``, ``fields``), with
            ``SqliteStore``'s ``text_fields`` for ``fields`` and the official stores'
            ``distance_type`` (:data:`DISTANCES`; ``"cosine"`` when absent or None)
            and ``PostgresStore``'s ``ann_index_config`` (:func:`ann_params`).

    Raises:
        ValueError: ``dims`` is not a positive integer, ``embed`` is missing, the fields
            are not paths, ``distance_type`` is not one of :data:`DISTANCES`, or
            ``ann_index_config`` is not what :func:`ann_params` takes.
    """

    def __init__(self, config: IndexConfig) -> None:
        dims = config.get("dims")
        if not isinstance(dims, int) or isinstance(dims, bool) or dims <= 0:
            raise ValueError(f"index config 'dims' must be a positive integer, not {dims!r}")
        if config.get("embed") is None:
            raise ValueError("index config needs 'embed': an Embeddings, a function or a name")
        distance = config.get("distance_type")
        if distance is None:
            distance = "cosine"
        if distance not in DISTANCES:
            raise ValueError(
                f"index config 'distance_type' must be one of {', '.join(DISTANCES)}, "
                f"not {distance!r}"
            )
        fields = field_paths(config)
        self.ann = ann_params(config.get("ann_index_config"))  # type: ignore[arg-type]
        self.config = config
        self.dims = dims
        self.distance: Distance = distance
        self.embeddings: Embeddings = ensure_embeddings(config.get("embed"))
        self.fields = [(p, p if p == "$" else tokenize_path(p)) for p in fields]


def texts_to_embed(
    spec: IndexSpec, value: Mapping[str, Any], index: Sequence[str] | None
) -> list[tuple[str, str]]:
    """``(field, text)`` pairs to embed for one put: the index config's fields, or the
    put's own ``index`` paths (LangGraph's ``PutOp.index``)."""
    paths = spec.fields if index is None else [(p, tokenize_path(p)) for p in index]
    out: list[tuple[str, str]] = []
    for path, tokens in paths:
        if tokens == "$":
            out.append((path, json.dumps(value, ensure_ascii=False, sort_keys=True)))
            continue
        texts = get_text_at_path(value, tokens)
        if len(texts) > 1:
            out.extend((f"{path}.{i}", text) for i, text in enumerate(texts))
        elif texts:
            out.append((path, texts[0]))
    return out


def vector_scores(
    query: Sequence[float], vectors: Iterable[bytes], distance: Distance = "cosine"
) -> list[float]:
    """The score of each packed vector against ``query`` by ``distance`` (see the module
    docstring: higher is closer), computed in float32 as the vectors are stored."""
    blobs = list(vectors)
    if not blobs:
        return []
    try:
        import numpy as np
    except ImportError:  # pure Python: about 50x slower, still exact
        return _python_scores(query, blobs, distance)
    q = np.asarray(query, dtype=np.float32)
    matrix = np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(blobs), -1)
    if distance == "l2":
        return [float(-s) for s in np.linalg.norm(matrix - q, axis=1)]
    dots = matrix @ q
    if distance == "inner_product":
        return [float(s) for s in dots]
    norms = np.linalg.norm(matrix, axis=1) * float(np.linalg.norm(q))
    with np.errstate(divide="ignore", invalid="ignore"):
        scores = np.where(norms > 0, dots / norms, 0.0)
    return [float(s) for s in scores]


def _python_scores(query: Sequence[float], blobs: list[bytes], distance: Distance) -> list[float]:
    qn = math.sqrt(sum(v * v for v in query))
    out = []
    for blob in blobs:
        vec = unpack(blob)
        if distance == "l2":
            out.append(-math.sqrt(sum((a - b) ** 2 for a, b in zip(vec, query, strict=False))))
            continue
        dot = sum(a * b for a, b in zip(query, vec, strict=False))
        if distance == "inner_product":
            out.append(dot)
            continue
        norm = math.sqrt(sum(v * v for v in vec)) * qn
        out.append(dot / norm if norm else 0.0)
    return out
