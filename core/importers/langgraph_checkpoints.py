"""LangGraph checkpoints: a ``SqliteSaver`` file or a ``PostgresSaver`` database.

Every thread becomes a session of the namespace (its id is the thread id), and its
checkpoints and pending writes are stored as :class:`WorkbenchSaver` stores them, replayed
oldest first through the saver itself: so the graph can carry on from the memory, and the
messages of the root checkpoints' ``messages`` channel become the session's events, each
once however many checkpoints repeat it, at the time (``ts``) of the first checkpoint that
holds it; a message a later checkpoint dropped (``RemoveMessage``) is marked removed.

Counted: ``checkpoints`` (one already in the memory is "already" and not written again),
``writes`` (counted with their checkpoint) and ``messages`` (distinct messages of the
thread: added, already held, or skipped with their thread). A thread whose id cannot be a
session id, or whose session belongs to another namespace, is skipped whole, with why; a
checkpoint LangGraph's serializer cannot read is skipped alone.

The source is read with LangGraph's own serializer (the ``langgraph`` extra) and, for
PostgreSQL, LangGraph's own ``PostgresSaver`` (``langgraph-checkpoint-postgres``), so
channel values stored as separate blobs are read as LangGraph reads them. A SQLite file is
opened read-only, a database in read-only transactions.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core import inputs
from core.errors import InvalidInput, OutOfNamespace
from core.importers.report import ImportReport, Progress
from core.importers.source import is_url, open_source, postgres_source, shown_source

if TYPE_CHECKING:
    from core.engine import Engine

FORMAT = "langgraph-checkpoints"
SHAPE = "a LangGraph SqliteSaver file"
CHECKPOINT_COLUMNS = ("thread_id", "checkpoint_ns", "checkpoint_id", "parent_checkpoint_id",
                      "type", "checkpoint", "metadata")
WRITE_COLUMNS = ("thread_id", "checkpoint_ns", "checkpoint_id", "task_id", "idx", "channel",
                 "type", "value")
POSTGRES_TABLES = ("checkpoints", "checkpoint_blobs", "checkpoint_writes")


@dataclass
class SourceCheckpoint:
    """One checkpoint as LangGraph reads it back, with its pending writes."""

    where: str
    thread_id: str
    checkpoint_ns: str
    checkpoint_id: str
    parent_id: str | None
    checkpoint: dict[str, Any]
    metadata: dict[str, Any]
    writes: list[tuple[str, str, Any, str, int]] = field(default_factory=list)
    """(task_id, channel, value, task_path, idx), in LangGraph's order."""


def _langgraph() -> Any:
    """LangGraph's serializer module, or ``InvalidInput`` naming the extra to install."""
    try:
        from langgraph.checkpoint.serde import jsonplus
    except ImportError:
        raise InvalidInput("importing LangGraph checkpoints needs LangGraph: install the "
                           "langgraph extra (pip install 'memory-workbench[langgraph]')"
                           ) from None
    return jsonplus


def check(source: str | Path) -> None:
    """Refuse a source that is not a SqliteSaver file or a PostgresSaver database
    (``InvalidInput``), touching no memory file."""
    _langgraph()
    if is_url(source):
        with postgres_source(str(source), "LangGraph") as conn:
            missing = [t for t in POSTGRES_TABLES if conn.execute(
                "SELECT to_regclass(%s)", (t,)).fetchone()["to_regclass"] is None]
        if missing:
            raise InvalidInput(f"the database is not a LangGraph PostgresSaver's: it has no "
                               f"{', '.join(map(repr, missing))} table")
        return
    with open_source(source) as database:
        database.require("checkpoints", CHECKPOINT_COLUMNS, SHAPE)
        database.require("writes", WRITE_COLUMNS, SHAPE)


async def import_langgraph_checkpoints(engine: Engine, source: str | Path, *,
                                       namespace: str | None = None,
                                       progress: Progress | None = None) -> ImportReport:
    """Import LangGraph checkpoints (see the module docstring) into ``namespace``
    (default: the engine's agent)."""
    from core.integrations.langgraph.messages import as_messages, keys_of
    from core.integrations.langgraph.saver import MESSAGES_CHANNEL, WorkbenchSaver

    namespace = engine.notes.namespace(namespace)
    shown = shown_source(source)
    report = ImportReport(shown, FORMAT, str(engine.location), namespace)
    for kind in ("checkpoints", "writes", "messages"):
        report.kind(kind)
    threads = (await _read_postgres(str(source), report) if is_url(source)
               else _read_sqlite(source, report))
    saver = WorkbenchSaver(engine, namespace=namespace)
    total = sum(len(found) for found in threads.values())
    done = 0
    for thread_id, checkpoints in threads.items():
        checkpoints.sort(key=lambda c: (c.checkpoint_ns != "", c.checkpoint_ns, c.checkpoint_id))
        keys = list(dict.fromkeys(key for c in checkpoints if c.checkpoint_ns == ""
                                  for key in keys_of(as_messages(
                                      c.checkpoint["channel_values"].get(MESSAGES_CHANNEL))
                                      or [])))
        refusal = await _refusal(engine, thread_id, namespace)
        if refusal is not None:
            for c in checkpoints:
                report.skip("checkpoints", c.where, refusal)
            for key in keys:
                report.skip("messages", f"thread {inputs.shown(thread_id)} message {key}",
                            refusal)
            done += len(checkpoints)
            continue
        held_before = {i.item_key for i in await engine.backend.langgraph_items(namespace,
                                                                                thread_id)}
        for c in checkpoints:
            await _replay(saver, c, report)
            done += 1
            if progress is not None:
                progress(done, total)
        held_after = {i.item_key for i in await engine.backend.langgraph_items(namespace,
                                                                               thread_id)}
        for key in keys:
            if key in held_before:
                report.already("messages")
            elif key in held_after:
                report.added("messages")
            else:
                report.skip("messages", f"thread {inputs.shown(thread_id)} message {key}",
                            "none of its checkpoints could be stored")
    if progress is not None and total == 0:
        progress(0, 0)
    report.remark("each message's time is that of the first checkpoint holding it")
    return report


async def _refusal(engine: Engine, thread_id: str, namespace: str) -> str | None:
    """Why a thread cannot land (None: it can)."""
    try:
        inputs.session_id(thread_id)
    except InvalidInput as exc:
        return f"its thread id cannot be a session id ({exc})"
    owner = await engine.backend.session_agent(thread_id)
    if owner is not None and owner != namespace:
        return (f"session {inputs.shown(thread_id)} belongs to another namespace in the "
                f"target, not to {namespace!r}")
    return None


async def _replay(saver: Any, c: SourceCheckpoint, report: ImportReport) -> None:
    """Store one checkpoint and its writes through the saver (counting them)."""
    from langgraph.checkpoint.base import WRITES_IDX_MAP

    own = {"configurable": {"thread_id": c.thread_id, "checkpoint_ns": c.checkpoint_ns,
                            "checkpoint_id": c.checkpoint_id}}
    if await saver.aget_tuple(own) is not None:
        report.already("checkpoints")
        report.already("writes", len(c.writes))
        return
    parent: dict[str, Any] = {"thread_id": c.thread_id, "checkpoint_ns": c.checkpoint_ns}
    if c.parent_id:
        parent["checkpoint_id"] = c.parent_id
    try:
        await saver.aput({"configurable": parent}, c.checkpoint, c.metadata, {})
    except (InvalidInput, OutOfNamespace) as exc:
        report.skip("checkpoints", c.where, str(exc))
        for _ in c.writes:
            report.skip("writes", c.where, "its checkpoint was not stored")
        return
    report.added("checkpoints")
    tasks: dict[tuple[str, str], list[tuple[int, str, Any]]] = defaultdict(list)
    for task_id, channel, value, task_path, idx in c.writes:
        if channel in WRITES_IDX_MAP:  # errors, interrupts: each stored on its own
            await saver.aput_writes(own, [(channel, value)], task_id, task_path)
        else:
            tasks[(task_id, task_path)].append((idx, channel, value))
    for (task_id, task_path), writes in tasks.items():
        writes.sort(key=lambda w: w[0])
        await saver.aput_writes(own, [(channel, value) for _, channel, value in writes],
                                task_id, task_path)
    report.added("writes", len(c.writes))


def _read_sqlite(path: str | Path, report: ImportReport) -> dict[str, list[SourceCheckpoint]]:
    """A SqliteSaver file's checkpoints by thread (unreadable ones skipped)."""
    import json

    serde = _langgraph().JsonPlusSerializer()
    threads: dict[str, list[SourceCheckpoint]] = defaultdict(list)
    with open_source(path) as database:
        database.require("checkpoints", CHECKPOINT_COLUMNS, SHAPE)
        database.require("writes", WRITE_COLUMNS, SHAPE)
        task_path = "task_path" if "task_path" in database.columns("writes") else "''"
        writes: dict[tuple[str, str, str], list[tuple[str, str, Any, str, int]]] = (
            defaultdict(list))
        for row in database.rows(f"SELECT {', '.join(WRITE_COLUMNS)}, {task_path} AS task_path"
                                 " FROM writes ORDER BY task_path, task_id, idx"):
            key = (str(row["thread_id"]), row["checkpoint_ns"], row["checkpoint_id"])
            try:
                value = serde.loads_typed((row["type"], row["value"]))
            except Exception as exc:  # noqa: BLE001 (whatever the serializer raises)
                report.skip("writes", f"writes row of checkpoint {row['checkpoint_id']}",
                            f"LangGraph's serializer cannot read it ({_short(exc)})")
                continue
            writes[key].append((row["task_id"], row["channel"], value, row["task_path"],
                                int(row["idx"])))
        for row in database.rows(f"SELECT {', '.join(CHECKPOINT_COLUMNS)} FROM checkpoints"
                                 " ORDER BY thread_id, checkpoint_ns, checkpoint_id"):
            thread_id = str(row["thread_id"])
            where = (f"thread {inputs.shown(thread_id)} checkpoint {row['checkpoint_id']}")
            try:
                checkpoint = serde.loads_typed((row["type"], row["checkpoint"]))
                metadata = json.loads(row["metadata"]) if row["metadata"] else {}
            except Exception as exc:  # noqa: BLE001 (whatever the serializer raises)
                report.skip("checkpoints", where,
                            f"LangGraph's serializer cannot read it ({_short(exc)})")
                continue
            threads[thread_id].append(SourceCheckpoint(
                where, thread_id, row["checkpoint_ns"], row["checkpoint_id"],
                row["parent_checkpoint_id"], checkpoint, metadata,
                writes.get((thread_id, row["checkpoint_ns"], row["checkpoint_id"]), [])))
    return threads


async def _read_postgres(url: str, report: ImportReport) -> dict[str, list[SourceCheckpoint]]:
    """A PostgresSaver database's checkpoints by thread, read by LangGraph's own saver."""
    import asyncio

    return await asyncio.to_thread(_read_postgres_now, url, report)


def _read_postgres_now(url: str, report: ImportReport) -> dict[str, list[SourceCheckpoint]]:
    try:
        from langgraph.checkpoint.postgres import PostgresSaver
    except ImportError:
        raise InvalidInput("importing PostgresSaver checkpoints needs LangGraph's PostgreSQL "
                           "saver: pip install langgraph-checkpoint-postgres") from None
    threads: dict[str, list[SourceCheckpoint]] = defaultdict(list)
    with postgres_source(url, "LangGraph") as conn:
        saver = PostgresSaver(conn)
        writes = _postgres_writes(conn, saver.serde)
        for found in saver.list(None):
            configurable = found.config["configurable"]
            thread_id = str(configurable["thread_id"])
            key = (thread_id, configurable["checkpoint_ns"], configurable["checkpoint_id"])
            parent = (found.parent_config or {}).get("configurable", {})
            threads[thread_id].append(SourceCheckpoint(
                f"thread {inputs.shown(thread_id)} checkpoint {configurable['checkpoint_id']}",
                thread_id, configurable["checkpoint_ns"], configurable["checkpoint_id"],
                parent.get("checkpoint_id"), dict(found.checkpoint), dict(found.metadata),
                writes.get(key, [(task_id, channel, value, "", idx) for idx, (task_id, channel,
                           value) in enumerate(found.pending_writes or [])])))
    return threads


def _postgres_writes(conn: Any, serde: Any) -> dict[tuple[str, str, str], list[Any]]:
    """A PostgresSaver's pending writes by checkpoint, with the task path and index each
    was stored at (``list`` hands them back without either); none when a write's value
    cannot be read (the saver's own reading is used for that checkpoint then)."""
    has_path = conn.execute(
        "SELECT 1 FROM information_schema.columns WHERE table_name = 'checkpoint_writes'"
        " AND column_name = 'task_path' AND table_schema = current_schema()").fetchone()
    task_path = "task_path" if has_path else "''"
    found: dict[tuple[str, str, str], list[Any]] = defaultdict(list)
    unreadable: set[tuple[str, str, str]] = set()
    for row in conn.execute(
            f"SELECT thread_id, checkpoint_ns, checkpoint_id, task_id, {task_path} AS task_path,"
            " idx, channel, type, blob FROM checkpoint_writes"
            " ORDER BY thread_id, checkpoint_ns, checkpoint_id, task_path, task_id, idx"):
        key = (str(row["thread_id"]), row["checkpoint_ns"], row["checkpoint_id"])
        try:
            value = serde.loads_typed((row["type"], row["blob"]))
        except Exception:  # noqa: BLE001 (whatever the serializer raises)
            unreadable.add(key)
            continue
        found[key].append((row["task_id"], row["channel"], value, row["task_path"],
                           row["idx"]))
    return {key: writes for key, writes in found.items() if key not in unreadable}


def _short(exc: BaseException) -> str:
    return inputs.shown(" ".join(str(exc).split()) or type(exc).__name__, 100)
