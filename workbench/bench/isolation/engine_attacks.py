"""Attacks through the engine API, in this process, on one open engine.

The attacker is a caller bound to a namespace of its own (``namespace=``), or a caller
naming a scope (``session_id=``/``namespace=`` of a search) that is not the victim's but is
crafted to reach it. Unbound calls on the victim's exact ids are the developer's view of the
whole file and are not attacks; crafted ids given to them are.
"""

# Each case is a lambda over the loop's variables, awaited within the same iteration (the
# probe runs it at once), so the late binding B023 warns about never applies.
# ruff: noqa: B023

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench.bench.isolation.inputs import (
    crafted_namespaces,
    crafted_note_refs,
    crafted_schedule_refs,
    crafted_sessions,
    crafted_tags,
    fts_queries,
    look_alike,
)
from workbench.bench.isolation.probe import Probe
from workbench.bench.isolation.victim import (
    ATTACKER,
    ATTACKER_CHAT,
    ATTACKER_MARK,
    ATTACKER_WRITER,
    BAIT,
    JUDGED_QUERY,
    VICTIM,
    VICTIM_CHAT,
    VICTIM_FACT,
    VICTIM_MEMORY_KEY,
    VICTIM_NOTE_ALIAS,
    VICTIM_NOTE_NAME,
    VICTIM_OLD,
    VICTIM_SCHEDULE_NAME,
    VICTIM_TAG,
    Planted,
)

if TYPE_CHECKING:
    from core.engine import Engine

ENTRY = "engine API"
Call = Callable[[], Awaitable[Any]]


async def attack_engine(engine: Engine, planted: Planted, probe: Probe, workdir: Path) -> None:
    """Every engine attack, each input one case; writes are followed by a snapshot."""
    out = workdir / "engine-out"
    out.mkdir(exist_ok=True)

    async def read(operation: str, given: list[Any], run: Call) -> Any:
        return await probe.call(ENTRY, operation, given, run)

    async def write(operation: str, given: list[Any], run: Call) -> Any:
        return await probe.call(ENTRY, operation, given, run, writes=True,
                                before_snapshot=engine.retrieval.flush_logs)

    async def exported(path: Path, run: Call) -> str:
        path.unlink(missing_ok=True)
        result = await run()
        return f"{result!r} {path.read_text(encoding='utf-8') if path.exists() else ''}"

    await _as_crafted_namespaces(engine, planted, read, write, exported, out)
    await _on_crafted_sessions(engine, read, write)
    await _typed_queries_and_tags(engine, read)
    await _note_and_schedule_refs(engine, planted, read, write)
    await _replays_judgments_imports(engine, planted, read, write, out)


async def _as_crafted_namespaces(engine: Engine, planted: Planted, read: Any, write: Any,
                                 exported: Any, out: Path) -> None:
    """A caller bound to a namespace crafted to reach the victim's, naming the victim's
    notes, facts, session and schedule (which it is assumed to know)."""
    from core.exporters import export_namespace

    schedules = engine.schedules
    note_id, memory_id = planted.note_ids[0], planted.note_ids[1]
    schedule_id = planted.schedule_id
    marked = f"{ATTACKER_MARK} aurora"
    for ns in crafted_namespaces(VICTIM):
        reads: dict[str, tuple[list[Any], Call]] = {
            "list_notes": ([], lambda: engine.list_notes(namespace=ns)),
            "list_notes(text)": (["hxq"], lambda: engine.list_notes(namespace=ns, text="hxq")),
            "list_notes(tags)": ([VICTIM_TAG], lambda: engine.list_notes(
                namespace=ns, tags=[VICTIM_TAG])),
            "get_note(name)": ([VICTIM_NOTE_NAME], lambda: engine.get_note(
                VICTIM_NOTE_NAME, namespace=ns)),
            "get_note(id)": ([note_id], lambda: engine.get_note(note_id, namespace=ns)),
            "list_memories": ([], lambda: engine.notes.list_memories(namespace=ns)),
            "recall_memories": ([], lambda: engine.notes.recall_memories(BAIT, namespace=ns)),
            "recall_memories(hxq)": (["hxq"], lambda: engine.notes.recall_memories(
                "hxq", namespace=ns)),
            "memory_search": ([], lambda: engine.notes.memory_search(BAIT, namespace=ns)),
            "list_facts": ([], lambda: engine.list_facts(namespace=ns)),
            "get_fact": ([*VICTIM_FACT], lambda: engine.get_fact(*VICTIM_FACT, namespace=ns)),
            "read_scratchpad": ([VICTIM_CHAT], lambda: engine.read_scratchpad(
                VICTIM_CHAT, namespace=ns)),
            "get_context": ([VICTIM_CHAT], lambda: engine.get_context(
                VICTIM_CHAT, BAIT, namespace=ns)),
            "search(namespace)": ([], lambda: engine.search(namespace=ns, query=BAIT)),
            "search(namespace, raw)": ([], lambda: engine.search(namespace=ns, query=BAIT,
                                                                 raw_fts=True)),
            "search(namespace, tags)": ([], lambda: engine.search(
                namespace=ns, query=BAIT, tags=["shared"])),
            "search(namespace, vector)": ([], lambda: engine.search(
                namespace=ns, query=BAIT, mode="vector")),
            "list_sessions(agent)": ([], lambda: engine.list_sessions(agent=ns)),
            "retrieval_log(namespace)": ([], lambda: engine.retrieval_log(50, namespace=ns)),
            "judgments(namespace)": ([], lambda: engine.judgments(JUDGED_QUERY, namespace=ns)),
            "search_schedules(user)": ([], lambda: schedules.search_schedules(ns)),
            "get_schedule(name, user)": ([VICTIM_SCHEDULE_NAME], lambda: schedules.get_schedule(
                VICTIM_SCHEDULE_NAME, ns)),
            "get_schedule(id, user)": ([schedule_id], lambda: schedules.get_schedule(
                schedule_id, ns)),
            "export_notes": ([], lambda: exported(out / "notes.json", lambda: engine.export_notes(
                out / "notes.json", namespace=ns))),
            "export namespace": ([], lambda: exported(out / "ns.jsonl", lambda: export_namespace(
                engine, ns, out / "ns.jsonl", "jsonl"))),
        }
        for operation, (known, run) in reads.items():
            await read(operation, [ns, *known], run)
        writes: dict[str, tuple[list[Any], Call]] = {
            "write_note": ([VICTIM_NOTE_NAME], lambda: engine.write_note(
                VICTIM_NOTE_NAME, marked, namespace=ns)),
            "edit_note": ([VICTIM_NOTE_ALIAS], lambda: engine.edit_note(
                VICTIM_NOTE_ALIAS, namespace=ns, name="mly-renamed", content=marked)),
            "rename_note": ([note_id], lambda: engine.rename_note(note_id, "mly-new",
                                                                  namespace=ns)),
            "alias_note": ([VICTIM_NOTE_NAME], lambda: engine.alias_note(
                VICTIM_NOTE_NAME, "mly-alias", namespace=ns)),
            "unalias_note": ([VICTIM_NOTE_ALIAS], lambda: engine.unalias_note(
                VICTIM_NOTE_ALIAS, namespace=ns)),
            "remove_note": ([memory_id], lambda: engine.remove_note(memory_id, namespace=ns)),
            "forget_memory": ([VICTIM_MEMORY_KEY], lambda: engine.remove_note(
                VICTIM_MEMORY_KEY, namespace=ns)),
            "delete_fact": ([*VICTIM_FACT], lambda: engine.delete_fact(*VICTIM_FACT,
                                                                       namespace=ns)),
            "clear_scratchpad": ([VICTIM_CHAT], lambda: engine.clear_scratchpad(
                VICTIM_CHAT, namespace=ns)),
            "write_scratchpad": ([VICTIM_CHAT], lambda: engine.write_scratchpad(
                VICTIM_CHAT, [marked], namespace=ns)),
            "append": ([VICTIM_CHAT], lambda: engine.append(
                VICTIM_CHAT, {"role": "user", "content": marked}, namespace=ns)),
            "store": ([VICTIM_CHAT], lambda: engine.store(
                VICTIM_CHAT, 99, {"role": "user", "content": marked}, namespace=ns)),
            "replay": ([], lambda: engine.replay(planted.log_ids[0], namespace=ns)),
        }
        for operation, (known, run) in writes.items():
            await write(operation, [ns, *known], run)


async def _on_crafted_sessions(engine: Engine, read: Any, write: Any) -> None:
    """Session ids crafted to reach the victim's, from a caller bound to its own namespace
    (and, for the crafted ids only, unbound calls that name a session exactly)."""
    marked = {"role": "user", "content": f"{ATTACKER_MARK} aurora"}
    exact = {VICTIM_CHAT, VICTIM_OLD, engine.note_session(VICTIM)}
    for sid in [*sorted(exact), *crafted_sessions(VICTIM_CHAT, VICTIM)]:
        given = [sid]
        reads: dict[str, Call] = {
            "read_scratchpad": lambda: engine.read_scratchpad(sid, namespace=ATTACKER),
            "get_context": lambda: engine.get_context(sid, BAIT, namespace=ATTACKER),
        }
        if sid not in exact:  # unbound calls: the victim's exact ids are the developer's
            reads |= {
                "retrieval_log(session)": lambda: engine.retrieval_log(50, session_id=sid),
                "judgments(session)": lambda: engine.judgments(JUDGED_QUERY, session_id=sid),
                "hybrid_query(session)": lambda: engine.search(session_id=sid, query=BAIT),
                "hybrid_query(session, raw)": lambda: engine.search(session_id=sid, query=BAIT,
                                                                    raw_fts=True),
                "hybrid_query(session, vector)": lambda: engine.search(
                    session_id=sid, query=BAIT, mode="vector"),
                "recall": lambda: engine.recall(sid),
                "session_state": lambda: engine.session_state(sid),
                "summary_state": lambda: engine.summary_state(sid),
                "restore": lambda: engine.restore(sid, 2000),
                "list_archives": lambda: engine.list_archives(sid),
            }
        for operation, run in reads.items():
            await read(operation, given, run)
        writes: dict[str, Call] = {
            "append": lambda: engine.append(sid, marked, namespace=ATTACKER_WRITER),
            "store": lambda: engine.store(sid, 1000, marked, namespace=ATTACKER_WRITER),
            "write_scratchpad": lambda: engine.write_scratchpad(sid, [ATTACKER_MARK],
                                                                namespace=ATTACKER_WRITER),
            "clear_scratchpad": lambda: engine.clear_scratchpad(sid, namespace=ATTACKER),
        }
        if sid not in exact:
            writes["forget"] = lambda: engine.forget(sid)
        for operation, run in writes.items():
            await write(operation, given, run)
    # The attacker's own conversations, named like the victim's archived one, compacted:
    # their markdown files must never land on the victim's.
    old = VICTIM_OLD
    for sid in (old.upper(), old + " ", "../" + old, old + "/../" + old, old.replace("-", "/"),
                old.replace("-", "_"), old.replace("-", " "), look_alike(old), old + "\x00",
                "%", "_"):
        async def compact_own(sid: str = sid) -> Any:
            for _ in range(3):
                await engine.append(sid, marked, namespace=ATTACKER_WRITER)
            return await engine.compact(sid)

        await write("compact(own look-alike session)", [sid], compact_own)


async def _typed_queries_and_tags(engine: Engine, read: Any) -> None:
    """FTS5 syntax, forged scope tokens and prefixes, and JSON-path tags, in the attacker's
    own scopes: only the attacker's rows may come back."""
    memory = engine.note_session(ATTACKER)
    for query in fts_queries(VICTIM_CHAT, VICTIM, BAIT):
        given: list[Any] = [query]
        reads: dict[str, Call] = {
            "search(session)": lambda: engine.search(session_id=ATTACKER_CHAT, query=query),
            "search(session, raw)": lambda: engine.search(session_id=ATTACKER_CHAT,
                                                          query=query, raw_fts=True),
            "search(namespace)": lambda: engine.search(namespace=ATTACKER, query=query),
            "search(namespace, raw)": lambda: engine.search(namespace=ATTACKER, query=query,
                                                            raw_fts=True),
            "search(notes session, raw)": lambda: engine.search(session_id=memory,
                                                                query=query, raw_fts=True),
            "recall_memories": lambda: engine.notes.recall_memories(query, namespace=ATTACKER),
            "memory_search": lambda: engine.notes.memory_search(query, namespace=ATTACKER),
            "list_notes(text)": lambda: engine.list_notes(namespace=ATTACKER, text=query),
            "search_schedules(text)": lambda: engine.schedules.search_schedules(
                ATTACKER, text=query),
            "get_context": lambda: engine.get_context(ATTACKER_CHAT, query,
                                                      namespace=ATTACKER),
        }
        for operation, run in reads.items():
            await read(operation, given, run)
    for tags in crafted_tags(VICTIM_TAG):
        given = [tags]
        reads = {
            "search(session, tags)": lambda: engine.search(session_id=ATTACKER_CHAT,
                                                           query=BAIT, tags=tags),
            "search(namespace, tags)": lambda: engine.search(namespace=ATTACKER, query=BAIT,
                                                             tags=tags),
            "search(namespace, tags, vector)": lambda: engine.search(
                namespace=ATTACKER, query=BAIT, tags=tags, mode="vector"),
            "search(namespace, tags, raw)": lambda: engine.search(
                namespace=ATTACKER, query=BAIT, tags=tags, raw_fts=True),
            "memory_search(tags)": lambda: engine.notes.memory_search(BAIT, tags=tags,
                                                                      namespace=ATTACKER),
            "list_notes(tags)": lambda: engine.list_notes(namespace=ATTACKER, tags=tags),
        }
        for operation, run in reads.items():
            await read(operation, given, run)


async def _note_and_schedule_refs(engine: Engine, planted: Planted, read: Any,
                                  write: Any) -> None:
    """The victim's note ids, names and aliases (and shapes of them) used in the attacker's
    namespace; the victim's schedule id and name used by the attacker's user."""
    names = [VICTIM_NOTE_NAME, VICTIM_NOTE_ALIAS, VICTIM_MEMORY_KEY, planted.archive_name]
    refs = [*planted.note_ids[1:], *crafted_note_refs(planted.note_ids[0], names)]
    marked = f"{ATTACKER_MARK} aurora"
    for ref in refs:
        given = [ref]
        await read("get_note", given, lambda: engine.get_note(ref, namespace=ATTACKER))
        writes: dict[str, Call] = {
            "write_note": lambda: engine.write_note(ref, marked, namespace=ATTACKER),
            "edit_note": lambda: engine.edit_note(ref, namespace=ATTACKER, tags=["mly"]),
            "rename_note": lambda: engine.rename_note(ref, "mly-renamed", namespace=ATTACKER),
            "alias_note": lambda: engine.alias_note(ref, "mly-alias", namespace=ATTACKER),
            "unalias_note": lambda: engine.unalias_note(ref, namespace=ATTACKER),
            "remove_note": lambda: engine.remove_note(ref, namespace=ATTACKER),
            "forget_memory": lambda: engine.remove_note(ref, namespace=ATTACKER),
        }
        for operation, run in writes.items():
            await write(operation, given, run)
    for key in (VICTIM_MEMORY_KEY, VICTIM_NOTE_NAME, VICTIM_NOTE_ALIAS):
        await write("save_memory(victim's key)", [key],
                    lambda: engine.notes.save_memory(key, marked, namespace=ATTACKER_WRITER))
    store = engine.schedules
    for ref in crafted_schedule_refs(planted.schedule_id, VICTIM_SCHEDULE_NAME):
        given = [ref]
        await read("get_schedule(ref, user)", given, lambda: store.get_schedule(ref, ATTACKER))
        await read("search_schedules(name)", given,
                   lambda: store.search_schedules(ATTACKER, name=ref))
        await read("search_schedules(text)", given,
                   lambda: store.search_schedules(ATTACKER, text=ref))
        if ref not in (planted.schedule_id, VICTIM_SCHEDULE_NAME):  # unbound: crafted only
            await read("get_schedule(ref)", given, lambda: store.get_schedule(ref))
            await write("update_schedule", given,
                        lambda: store.update_schedule(ref, goal=marked))
            await write("pause_schedule", given, lambda: store.pause_schedule(ref))
            await write("delete_schedule", given, lambda: store.delete_schedule(ref))


async def _replays_judgments_imports(engine: Engine, planted: Planted, read: Any, write: Any,
                                     out: Path) -> None:
    """The victim's logged queries replayed from another namespace or scope; judgments of
    the victim's chunks; a notes file claiming the victim's ids and names."""
    for log_id in planted.log_ids:
        given = [str(log_id)]
        await write("replay(namespace)", given,
                    lambda: engine.replay(log_id, namespace=ATTACKER))
        await write("replay(session_id)", given,
                    lambda: engine.replay(log_id, session_id=ATTACKER_CHAT))
        await write("replay(namespace, top_k)", given,
                    lambda: engine.replay(log_id, namespace=ATTACKER, top_k=50))
    for chunk_id in planted.chunk_ids[:3]:
        await write("judge(own scope)", [chunk_id], lambda: engine.judge(
            JUDGED_QUERY, chunk_id, 0, session_id=ATTACKER_CHAT))
        for ns in crafted_namespaces(VICTIM)[:8]:
            await write("judge(crafted namespace)", [chunk_id, ns], lambda: engine.judge(
                JUDGED_QUERY, chunk_id, 0, namespace=ns))
    notes: list[dict[str, Any]] = [
        {"note_id": note_id, "name": name, "content": f"{ATTACKER_MARK} aurora"}
             for note_id, name in zip(planted.note_ids, [VICTIM_NOTE_NAME, VICTIM_MEMORY_KEY,
                                                         "mly-third", "mly-fourth"],
                                      strict=False)]
    notes[0]["aliases"] = [VICTIM_NOTE_ALIAS]
    path = out / "claims.json"
    path.write_text(json.dumps({"format": "memory-workbench-notes", "version": 1,
                                "namespace": VICTIM, "notes": notes}), encoding="utf-8")
    for ns in (ATTACKER_WRITER, ATTACKER_WRITER + "%"):  # namespaces nothing later reads
        for overwrite in (False, True):
            await write(f"import_notes(overwrite={overwrite})", [ns, path.read_text()],
                        lambda: engine.import_notes(path, namespace=ns, overwrite=overwrite))
