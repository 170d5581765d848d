"""The codec layer: pure Python between a call's arguments and the rows of the tables.

Argument and config checks (:mod:`.configs`), the encoding of checkpoints into rows and
of rows back into ``CheckpointTuple`` objects (:mod:`.rows`, :mod:`.inline`,
:mod:`.valuecache`) and the records the operations hand over (:mod:`.records`), the
shape checks of rows read back (:mod:`.damage`), the one JSON form of metadata
(:mod:`.canonical`), the metadata index's keys and values (:mod:`.metakeys`), threads as
listed and the times in checkpoint ids (:mod:`.threadinfo`), the serializers that never
run stored code (:mod:`.strict`, :mod:`.opaque`), URLs shown without secrets
(:mod:`.display`) and the install commands messages name (:mod:`.install`).

May import: :mod:`..schema`, :mod:`..errors`, the standard library, SQLAlchemy's types
and LangGraph. Never an engine, an operation, a plan or a dialect module: nothing here
talks to a database.
"""
