"""Reading a source for transfer: our tables or an official saver's, opened by URL.

:func:`open_saver` (behind :func:`.transfer.open_source`) tells the store apart by the
tables present (ours ``lgsa_*``; an official ``SqliteSaver`` file's ``checkpoints`` and
``writes``; an official ``PostgresSaver`` database's ``checkpoints``,
``checkpoint_blobs`` and ``checkpoint_writes``), reflects an official store's tables and
wraps its saver in a :class:`Source`. :class:`Reader` reads threads, checkpoint keys and
checkpoints with their pending writes from any saver: through its raw tables when known,
else through ``list``/``get_tuple``.
"""

from __future__ import annotations

import copy
import sqlite3
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar, cast
from urllib.parse import quote

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointTuple
from langgraph.checkpoint.serde.base import SerializerProtocol

from langgraph.checkpoint.sqlalchemy._codec.configs import checkpoint_config
from langgraph.checkpoint.sqlalchemy._codec.opaque import OpaqueSerializer, cipher_of
from langgraph.checkpoint.sqlalchemy._codec.records import PendingWrite
from langgraph.checkpoint.sqlalchemy._engine.engines import source_url
from langgraph.checkpoint.sqlalchemy._transfer import held as _held
from langgraph.checkpoint.sqlalchemy._transfer.kinds import SourceKind
from langgraph.checkpoint.sqlalchemy.errors import UnknownSourceError
from langgraph.checkpoint.sqlalchemy.saver import SQLAlchemySaver
from langgraph.checkpoint.sqlalchemy.schema import checkpoints as our_checkpoints
from langgraph.checkpoint.sqlalchemy.schema import full_name, name_key, stored_full
from langgraph.checkpoint.sqlalchemy.schema import writes as our_writes
from sqlalchemy import (
    Connection,
    Engine,
    MetaData,
    Table,
    create_engine,
    func,
    inspect,
    null,
    select,
)
from sqlalchemy.pool import NullPool

__all__ = [
    "BATCH",
    "Reader",
    "Source",
    "SourceKind",
    "Tables",
    "batches",
    "opaque_view",
    "open_saver",
    "thread_config",
]

_OUR_TABLES = {"lgsa_checkpoints", "lgsa_checkpoint_blobs", "lgsa_checkpoint_writes"}
_SQLITE_TABLES = {"checkpoints", "writes"}
_POSTGRES_TABLES = {"checkpoints", "checkpoint_blobs", "checkpoint_writes"}

T = TypeVar("T")


@dataclass
class Tables:
    """Raw access to a source's tables, for what the saver API does not give: the thread
    list, the checkpoint keys without their values, and ``task_path``/``idx`` of writes.

    Attributes:
        run: Runs ``op(conn)`` on a connection to the source and returns its result.
        checkpoints: The checkpoints table.
        writes: The pending-writes table.
        value_column: The writes table's column of serialised values.
    """

    run: Callable[[Callable[[Connection], Any]], Any]
    checkpoints: Table
    writes: Table
    value_column: str


class Source(BaseCheckpointSaver[Any]):
    """An official saver's database opened by :func:`open_source`: reads like the saver
    it wraps (``get_tuple``, ``list``, ``serde``; the official sync savers have no async
    methods) and owns the tables, engine and kind transfer reads beside it.

    Args:
        saver: The official saver (``SqliteSaver`` or ``PostgresSaver``).
        kind: ``"sqlite"`` or ``"postgres"``.
        engine: A read-only engine on the same database.
        checkpoints: Its checkpoints table, reflected.
        writes: Its writes table, reflected.
        value_column: The writes table's column of serialised values.
    """

    def __init__(
        self,
        saver: BaseCheckpointSaver[Any],
        kind: str,
        engine: Engine,
        checkpoints: Table,
        writes: Table,
        value_column: str,
    ) -> None:
        super().__init__()
        self.saver = saver
        self.serde = saver.serde
        self.kind = kind
        self._engine = engine
        self.tables = Tables(self._read, checkpoints, writes, value_column)

    def with_serde(self, serde: SerializerProtocol) -> Source:
        """This source reading through ``serde`` (a shallow copy of the official saver
        with that serializer)."""
        inner = copy.copy(self.saver)
        inner.serde = serde
        clone = copy.copy(self)
        clone.saver = inner
        clone.serde = serde
        return clone

    def _read(self, op: Callable[[Connection], T]) -> T:
        with self._engine.connect() as conn:
            return op(conn)

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The wrapped saver's ``get_tuple``."""
        return self.saver.get_tuple(config)

    def list(self, config: RunnableConfig | None, **kwargs: Any) -> Iterator[CheckpointTuple]:
        """The wrapped saver's ``list`` (``filter``, ``before``, ``limit``)."""
        return self.saver.list(config, **kwargs)


def opaque_view(saver: BaseCheckpointSaver[Any]) -> BaseCheckpointSaver[Any]:
    """``saver`` reading and writing values as data, never rebuilding an object
    (:class:`._codec.opaque.OpaqueSerializer`, with the cipher of its ``EncryptedSerializer``).

    Ours and a :class:`Source` get such a view, sharing their engines; any other saver
    is returned as is (its own ``get_tuple``/``list`` decode with its serializer).
    """
    opaque = OpaqueSerializer(cipher_of(saver.serde))
    if isinstance(saver, SQLAlchemySaver):
        return saver._with_serde(opaque, strict_decode=False)
    if isinstance(saver, Source):
        return saver.with_serde(opaque)
    return saver


def _tables_of(saver: BaseCheckpointSaver[Any]) -> Tables | None:
    if isinstance(saver, SQLAlchemySaver):
        # Ours, through the saver's read door: missing or outdated tables are its
        # typed error.
        return Tables(saver.run_read, our_checkpoints, our_writes, "blob")
    if isinstance(saver, Source):
        return saver.tables
    return None


class Reader:
    """Reads threads, checkpoint keys (oldest first) and checkpoints with their writes
    from any saver: through its raw tables when known, else through ``list``. Ours and
    an official saver's are read through :func:`opaque_view`: values as data, no object
    rebuilt."""

    def __init__(self, saver: BaseCheckpointSaver[Any]) -> None:
        self.saver = opaque_view(saver)
        self.opaque = self.saver is not saver
        self.tables = _tables_of(self.saver)

    def threads(self) -> list[str]:
        if self.tables is None:
            seen = dict.fromkeys(
                str(t.config["configurable"]["thread_id"]) for t in self.saver.list(None)
            )
            return sorted(seen)
        c = self.tables.checkpoints.c

        def op(conn: Connection) -> list[str]:
            if "thread_id_full" in c:  # ours: a long id's text beside its digest key
                rows = conn.execute(
                    select(c.thread_id, func.max(c.thread_id_full)).group_by(c.thread_id)
                )
                return sorted(full_name(key, full) for key, full in rows)
            rows = conn.execute(select(c.thread_id).distinct().order_by(c.thread_id))
            return [str(r[0]) for r in rows]

        return cast(list[str], self.tables.run(op))

    def keys(self, thread_id: str) -> list[tuple[str, str]]:
        """``(checkpoint_ns, checkpoint_id)`` of a thread, oldest checkpoint first."""
        if self.tables is None:
            found = [
                (
                    str(t.config["configurable"].get("checkpoint_ns", "")),
                    str(t.config["configurable"]["checkpoint_id"]),
                )
                for t in self.saver.list(thread_config(thread_id))
            ]
        else:
            c = self.tables.checkpoints.c
            ours = "checkpoint_ns_full" in c  # a long name's text beside its digest key
            full_ns = c.checkpoint_ns_full if ours else null()
            query = select(c.checkpoint_ns, c.checkpoint_id, full_ns).where(
                c.thread_id == thread_id
            )
            if ours and stored_full(thread_id) is not None:
                query = query.where(c.thread_id_full == thread_id)
            found = self.tables.run(
                lambda conn: [(full_name(r[0], r[2]), str(r[1])) for r in conn.execute(query)]
            )
        return sorted(found, key=lambda k: (k[1], k[0]))

    def missing(self, thread_ids: Sequence[str]) -> list[str]:
        """The ids of ``thread_ids`` that have no checkpoint here, in their order."""
        if self.tables is None:
            return [
                t
                for t in thread_ids
                if next(iter(self.saver.list(thread_config(t), limit=1)), None) is None
            ]
        c = self.tables.checkpoints.c

        def op(conn: Connection) -> set[str]:
            found: set[str] = set()
            for batch in batches(list(dict.fromkeys(thread_ids))):
                query = select(c.thread_id).where(c.thread_id.in_(batch)).distinct()
                found.update(str(r[0]) for r in conn.execute(query))
            return found

        found = self.tables.run(op)
        # Our tables hold a long id's digest key (schema.name_key); the official ones the id.
        key_of = name_key if "thread_id_full" in c else str
        return [t for t in thread_ids if key_of(t) not in found]

    def write_keys(self, thread_id: str, keys: Sequence[tuple[str, str]]) -> _held.WriteKeys:
        """``(checkpoint_ns, checkpoint_id, task_id, channel)`` of the pending writes of
        the checkpoints ``keys`` of a thread, with their multiplicity (as
        :func:`._transfer.held.held_keys` reads them from the target)."""
        wanted = set(keys)
        if self.tables is None:
            found: _held.WriteKeys = Counter()
            for ns, checkpoint_id in keys:
                tup = self.saver.get_tuple(checkpoint_config(thread_id, ns, checkpoint_id))
                for task_id, channel, _ in (tup.pending_writes or []) if tup else []:
                    found[(ns, checkpoint_id, str(task_id), str(channel))] += 1
            return found
        w = self.tables.writes.c
        query = select(w.checkpoint_ns, w.checkpoint_id, w.task_id, w.channel).where(
            w.thread_id == thread_id, w.checkpoint_id.in_(sorted({k[1] for k in keys}))
        )
        ns_by_key = (
            _held.ns_by_key(keys) if "checkpoint_ns_full" in self.tables.checkpoints.c else None
        )
        return cast(
            _held.WriteKeys,
            self.tables.run(lambda conn: _held.counted(conn.execute(query), wanted, ns_by_key)),
        )

    def read(
        self, thread_id: str, ns: str, checkpoint_id: str
    ) -> tuple[CheckpointTuple, list[PendingWrite]]:
        tup = self.saver.get_tuple(checkpoint_config(thread_id, ns, checkpoint_id))
        if tup is None:
            raise LookupError(f"checkpoint {thread_id}/{ns!r}/{checkpoint_id} vanished")
        if self.tables is None:
            pending = [PendingWrite(t, "", ch, None, v) for t, ch, v in tup.pending_writes or []]
            return tup, pending
        w = self.tables.writes.c
        has_path = "task_path" in w
        query = select(
            w.task_id,
            w.task_path if has_path else w.task_id.label("task_path"),
            w.idx,
            w.channel,
            w.type,
            w[self.tables.value_column],
        ).where(w.thread_id == thread_id, w.checkpoint_ns == ns, w.checkpoint_id == checkpoint_id)
        rows = self.tables.run(lambda conn: conn.execute(query).all())
        serde = self.saver.serde
        # Through an opaque view each write moves as stored, not decoded (byte for byte).
        load = serde.stored if isinstance(serde, OpaqueSerializer) else _typed_loader(serde)
        pending = [
            PendingWrite(
                str(task_id),
                str(path) if has_path and path is not None else "",
                str(channel),
                int(idx),
                load(str(type_), bytes(blob) if blob is not None else b""),
            )
            for task_id, path, idx, channel, type_, blob in rows
        ]
        pending.sort(key=lambda p: (p.task_path, p.task_id, p.idx or 0))
        return tup, pending


def _typed_loader(serde: SerializerProtocol) -> Callable[[str, bytes], Any]:
    return lambda type_, data: serde.loads_typed((type_, data))


def thread_config(thread_id: str) -> RunnableConfig:
    return {"configurable": {"thread_id": thread_id}}


#: Checkpoints (or thread ids) per verification query: bounds memory and the size of
#: each ``IN`` list.
BATCH = 500


def batches(items: Sequence[Any]) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), BATCH):
        yield items[start : start + BATCH]


@contextmanager
def _engine(url: Any) -> Iterator[Engine]:
    # Plain engine, no WAL switch or write options: it only reads, maybe a read-only file.
    engine = create_engine(url, poolclass=NullPool)
    try:
        yield engine
    finally:
        engine.dispose()


#: Columns :class:`Reader` reads from an official store's checkpoints and writes tables.
_CHECKPOINT_COLUMNS = {"thread_id", "checkpoint_ns", "checkpoint_id"}
_WRITE_COLUMNS = {
    "thread_id",
    "checkpoint_ns",
    "checkpoint_id",
    "task_id",
    "idx",
    "channel",
    "type",
}


def _reflect(engine: Engine, checkpoints: str, writes: str, value: str) -> dict[str, Table]:
    """The official store's two tables, reflected.

    Raises:
        UnknownSourceError: A table lacks a column the official saver has (a database
            with tables of those names that are something else).
    """
    md = MetaData()
    with engine.connect() as conn:
        tables = {n: Table(n, md, autoload_with=conn) for n in (checkpoints, writes)}
    for name, needed in ((checkpoints, _CHECKPOINT_COLUMNS), (writes, {*_WRITE_COLUMNS, value})):
        lacking = needed - set(tables[name].c.keys())
        if lacking:
            raise UnknownSourceError(
                f"table {name} lacks the columns {', '.join(sorted(lacking))} of an official "
                "checkpoint store: it is not one"
            )
    return tables


def _detect(table_names: set[str], dialect: str, kind: SourceKind) -> str:
    found = []
    if table_names >= _OUR_TABLES:
        found.append("sqlalchemy")
    if dialect == "sqlite" and table_names >= _SQLITE_TABLES:
        found.append("sqlite")
    if dialect == "postgresql" and table_names >= _POSTGRES_TABLES:
        found.append("postgres")
    if kind != "auto":
        if kind not in found:
            raise UnknownSourceError(
                f"no tables of a {kind!r} checkpoint store found (tables present: "
                f"{', '.join(sorted(table_names)) or 'none'})."
            )
        return kind
    if not found:
        raise UnknownSourceError(
            "no checkpoint tables found: expected ours (lgsa_checkpoints, ...), an "
            "official SqliteSaver file (checkpoints, writes) or an official PostgresSaver "
            "database (checkpoints, checkpoint_blobs, checkpoint_writes); tables present: "
            f"{', '.join(sorted(table_names)) or 'none'}."
        )
    if len(found) > 1:
        raise UnknownSourceError(
            f"several checkpoint stores found ({', '.join(found)}): say which one to read "
            "(kind=..., or --from-kind on the command line)."
        )
    return found[0]


def _missing_extra(package: str, exc: ImportError) -> ImportError:
    return ImportError(
        f"reading this database needs {package}: pip install {package} (or the "
        f"'bench' extra of langgraph-checkpoint-sqlalchemy). ({exc})"
    )


@contextmanager
def open_saver(
    url: str, *, kind: SourceKind = "auto", schema: str | None = None
) -> Iterator[BaseCheckpointSaver[Any]]:
    """What :func:`.transfer.open_source` does (its docstring says what it yields and
    raises): detect the store at ``url``, yield our saver or a :class:`Source`."""
    sync_url = source_url(url)
    with _engine(sync_url) as engine:
        insp = inspect(engine)
        names = set(insp.get_table_names(schema=schema))
        found = _detect(names, engine.dialect.name, kind)
        if found == "sqlalchemy":
            with SQLAlchemySaver.from_conn_string(url, schema=schema) as saver:
                yield saver
            return
        if found == "sqlite":
            try:
                from langgraph.checkpoint.sqlite import SqliteSaver
            except ImportError as e:
                raise _missing_extra("langgraph-checkpoint-sqlite", e) from e

            path = (sync_url.database or "").removeprefix("file:")  # source_url's file
            conn = sqlite3.connect(
                f"file:{quote(path)}?mode=ro",
                uri=True,
                check_same_thread=False,
            )
            try:
                tables = _reflect(engine, "checkpoints", "writes", "value")
                yield Source(
                    SqliteSaver(conn),
                    "sqlite",
                    engine,
                    tables["checkpoints"],
                    tables["writes"],
                    "value",
                )
            finally:
                conn.close()
            return
        try:
            from langgraph.checkpoint.postgres import PostgresSaver
        except ImportError as e:
            raise _missing_extra("langgraph-checkpoint-postgres", e) from e
        libpq = sync_url.set(drivername="postgresql").render_as_string(hide_password=False)
        with PostgresSaver.from_conn_string(libpq) as pg_saver:
            tables = _reflect(engine, "checkpoints", "checkpoint_writes", "blob")
            yield Source(
                pg_saver,
                "postgres",
                engine,
                tables["checkpoints"],
                tables["checkpoint_writes"],
                "blob",
            )
