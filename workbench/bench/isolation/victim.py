"""The victim's memory, planted with secrets, and a snapshot of everything it owns.

Every secret is a word starting ``hxq`` (so a prefix query ``hxq*`` is itself an attack)
placed beside the bait words ``aurora`` and ``lantern``, which the attacker's own memory
holds too: an attacker's query for the bait finds the attacker's rows, and must find only
those. The attacker's own writes carry :data:`ATTACKER_MARK`, so the victim's view can be
checked the other way round.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from core.engine import Engine

VICTIM = "vicns"
VICTIM_CHAT = "vicns-chat"
VICTIM_OLD = "vicns-old"  # compacted: an Archive note and a markdown file
ATTACKER = "mallory"
ATTACKER_CHAT = "mallory-chat"
ATTACKER_WRITER = "mallory-w"  # the namespace whose writes make sessions of crafted ids
ATTACKER_MARK = "mlyplant"
BAIT = "aurora"
VICTIM_TAG = "hxqnotetag"
VICTIM_NOTE_NAME = "hxqnotename"
VICTIM_NOTE_ALIAS = "hxqnotealias"
VICTIM_MEMORY_KEY = "hxqmemkey"
VICTIM_FACT = ("hxqfactcat", "hxqfactkey")
VICTIM_SCHEDULE_NAME = "hxqschedname"
JUDGED_QUERY = "aurora lantern"

CONFIG = {"embedding": {"backend": "deterministic", "fallback_dimensions": 32},
          "consolidation": {"enabled": False}}
CONFIG_TOML = ('[embedding]\nbackend = "deterministic"\nfallback_dimensions = 32\n'
               "[consolidation]\nenabled = false\n")


@dataclass
class Planted:
    """What was planted: the ids an attacker is assumed to know, and the markers."""

    db_path: str  # the memory file's path or the PostgreSQL URL the owner connects with
    note_ids: list[str] = field(default_factory=list)
    chunk_ids: list[str] = field(default_factory=list)
    schedule_id: str = ""
    archive_name: str = ""
    log_ids: list[int] = field(default_factory=list)
    words: dict[str, str] = field(default_factory=dict)  # secret word -> what it is
    ids: dict[str, str] = field(default_factory=dict)  # the victim's ids and names -> what

    @property
    def sessions(self) -> list[str]:
        from core.storage.vocabulary import memory_session_id

        return [VICTIM_CHAT, VICTIM_OLD, memory_session_id(VICTIM)]


def _message(role: str, content: str, **extra: Any) -> dict[str, Any]:
    return {"role": role, "content": content, **extra}


async def plant_victim(engine: Engine, db_path: str) -> Planted:
    """Write the victim's memory through the engine, bound to the victim's namespace."""
    planted = Planted(db_path)
    bound: dict[str, Any] = {"namespace": VICTIM}
    for message in (
        _message("user", "aurora lantern meridian hxqmsgone"),
        _message("assistant", "aurora lantern reply hxqmsgtwo", tool_calls=[{
            "id": "call_1", "type": "function",
            "function": {"name": "lookup", "arguments": '{"q": "hxqtoolarg"}'}}]),
        _message("tool", "aurora hxqtoolresult", tool_call_id="call_1", tool_name="lookup"),
        _message("user", "aurora salient hxqsalient", importance=0.95,
                 metadata={"tags": ["hxqmsgtag", "shared"], "note_id": "hxqmetanote"}),
        _message("user", "lantern aurora hxqmsgfive"),
    ):
        await engine.append(VICTIM_CHAT, message, **bound)
    for n in range(1, 6):
        await engine.append(VICTIM_OLD, _message("user", f"aurora archive words hxqold{n}"),
                            **bound)
    archive = await engine.compact(VICTIM_OLD)
    planted.archive_name = archive.archive_name
    note = await engine.add_note(VICTIM_NOTE_NAME, "aurora lantern hxqnotebody",
                                 aliases=[VICTIM_NOTE_ALIAS], tags=[VICTIM_TAG, "shared"],
                                 **bound)
    memory = await engine.notes.save_memory(VICTIM_MEMORY_KEY, "aurora hxqmembody", "daily",
                                            **bound)
    saved = await engine.notes.memory_save("aurora lantern hxqsavebody",
                                           tags=["hxqsavetag", "shared", "$.note_id"], **bound)
    await engine.upsert_fact(*VICTIM_FACT, "hxqfactvalue", **bound)
    await engine.upsert_fact("prefs", "colour", "hxqfactcolour", **bound)
    await engine.write_scratchpad(VICTIM_CHAT, ["aurora hxqscratch"], **bound)
    state = await engine.summary_state(VICTIM_CHAT)
    await engine.write_summary_state(VICTIM_CHAT, "aurora hxqsummary", 2, state.epoch)
    schedule = await engine.schedules.create_schedule(
        VICTIM, "aurora hxqschedgoal", {"kind": "interval", "value": "1h", "timezone": "UTC"},
        name=VICTIM_SCHEDULE_NAME)
    await engine.schedules.record_run_and_reschedule(
        schedule.schedule_id, {"status": "ok", "output": "hxqrunoutput"},
        schedule.next_run_at)
    await engine.drain()
    found = await engine.hybrid_query(session_id=VICTIM_CHAT, query="aurora hxqloggedquery")
    await engine.hybrid_query(namespace=VICTIM, query="lantern hxqloggedns")
    await engine.notes.memory_search("hxqloggednote aurora", **bound)
    await engine.judge(JUDGED_QUERY, found[0].chunk_id, 3, session_id=VICTIM_CHAT)
    await engine.judge(JUDGED_QUERY, found[0].chunk_id, 2, namespace=VICTIM)
    await engine.retrieval.flush_logs()
    planted.log_ids = [entry["log_id"] for entry in await engine.retrieval_log(10)]
    planted.note_ids = [note.note_id, memory.note_id, saved.note_id,
                        *[n.note_id for n in (await engine.list_notes(**bound)).notes
                          if n.kind == "Archive"]]
    planted.schedule_id = schedule.schedule_id
    conn = _Reader(db_path)
    try:
        planted.chunk_ids = [row[0] for row in conn.execute(
            f"SELECT chunk_id FROM chunks WHERE session_id IN ({_marks(planted.sessions)})",
            planted.sessions)]
        run_ids = [row[0] for row in conn.execute(
            "SELECT run_id FROM schedule_runs WHERE schedule_id = ?", (schedule.schedule_id,))]
    finally:
        conn.close()
    planted.words, planted.ids = _markers(planted, run_ids)
    return planted


def _markers(planted: Planted, run_ids: list[str]) -> tuple[dict[str, str], dict[str, str]]:
    """The secret words (found in any letter case) and the victim's ids (found exactly)."""
    words = ["hxqmsgone", "hxqmsgtwo", "hxqtoolarg", "hxqtoolresult", "hxqsalient",
             "hxqmsgtag", "hxqmetanote", "hxqmsgfive", *[f"hxqold{n}" for n in range(1, 6)],
             VICTIM_NOTE_NAME, "hxqnotebody", VICTIM_NOTE_ALIAS, VICTIM_TAG, VICTIM_MEMORY_KEY,
             "hxqmembody", "hxqsavebody", "hxqsavetag", *VICTIM_FACT, "hxqfactvalue",
             "hxqfactcolour", "hxqscratch", "hxqsummary", "hxqschedgoal", VICTIM_SCHEDULE_NAME,
             "hxqrunoutput", "hxqloggedquery", "hxqloggedns", "hxqloggednote"]
    ids: dict[str, str] = {}
    for kind, values in (("note id", planted.note_ids), ("chunk id", planted.chunk_ids),
                         ("schedule id", [planted.schedule_id]), ("run id", run_ids),
                         ("session", planted.sessions), ("archive", [planted.archive_name]),
                         ("namespace", [VICTIM])):
        ids.update({value: f"the victim's {kind} {value}" for value in values})
    return {word: f"secret {word}" for word in words}, ids


async def plant_attacker(engine: Engine) -> None:
    """The attacker's own memory, holding the same bait words (and its mark)."""
    bound: dict[str, Any] = {"namespace": ATTACKER}
    for text in ("aurora lantern mine mlyplant", "lantern aurora again mlyplant"):
        await engine.append(ATTACKER_CHAT, _message("user", text), **bound)
    await engine.add_note("mallory note", "aurora lantern mlyplant note", tags=["shared"],
                          **bound)
    await engine.notes.save_memory("mallory key", "aurora mlyplant memory", **bound)
    await engine.notes.memory_save("aurora mlyplant saved", tags=["shared", "mly"], **bound)
    await engine.upsert_fact("prefs", "colour", "mlyplant teal", **bound)
    await engine.schedules.create_schedule(
        ATTACKER, "aurora mlyplant goal", {"kind": "interval", "value": "1h",
                                           "timezone": "UTC"}, name="mallory schedule")
    await engine.drain()


def _marks(values: list[Any]) -> str:
    return ", ".join("?" * len(values))


class _Reader:
    """A read connection of its own to the memory, file or PostgreSQL, taking SQLite's ``?``
    placeholders on both (no query here holds a literal ``?``)."""

    def __init__(self, memory: str) -> None:
        from core.locations import parse_location

        location = parse_location(memory)
        self.postgres = location.is_postgres
        if self.postgres:
            import psycopg

            self._pg = psycopg.connect(memory, autocommit=True)
        else:
            from core.storage import open_connection

            self._lite = open_connection(location.path, read_only=True, busy_timeout_ms=5000)

    def execute(self, query: str, params: Any = ()) -> list[Any]:
        if self.postgres:
            return self._pg.execute(query.replace("?", "%s"), list(params)).fetchall()
        return self._lite.execute(query, params).fetchall()

    def data_version(self) -> int | str:
        """What changes whenever another connection commits: SQLite's count of commits by
        other connections; on PostgreSQL, the server's current snapshot (``xmin:xmax:xip``).

        A PostgreSQL transaction that wrote has an id, and its end changes the snapshot: an id
        below ``xmax`` leaves the in-progress list (or moves ``xmin``), one at or above it
        moves ``xmax`` up, and ``xmax`` never moves back. The same snapshot text twice means
        no writing transaction ended in between. Reads assign no id, so they change nothing;
        other databases' writes on the same server do, which only costs a reading more."""
        if self.postgres:
            row = self._pg.execute("SELECT pg_current_snapshot()::text").fetchone()
            assert row is not None
            return str(row[0])
        return int(self._lite.execute("PRAGMA data_version").fetchone()[0])

    def close(self) -> None:
        (self._pg if self.postgres else self._lite).close()


class Snapshot:
    """Everything the victim owns, read through a connection of its own: the rows of every
    table that holds the victim's data, the FTS and vector rows of its chunks, and its
    archive files. Two snapshots are equal exactly when nothing of the victim's changed."""

    def __init__(self, planted: Planted, archive_root: Path) -> None:
        from core.storage.vocabulary import scope_token_for
        from core.summary.archive_files import safe_name

        self._planted = planted
        self._conn = _Reader(planted.db_path)
        self._folder = archive_root / safe_name(VICTIM_OLD)
        self._tokens = [scope_token_for(session) for session in planted.sessions]
        self._last: tuple[Any, dict[str, Any]] | None = None

    def close(self) -> None:
        self._conn.close()

    def __call__(self) -> dict[str, Any]:
        # A refusal commits nothing: while no connection has committed (``data_version``)
        # and no archive file changed, the last reading still holds.
        version = self._conn.data_version()
        files = sorted((p.name, p.stat().st_mtime_ns, p.stat().st_size)
                       for p in self._folder.iterdir()) if self._folder.is_dir() else []
        if self._last is not None and self._last[0] == (version, files):
            return self._last[1]
        found = self._read()
        self._last = ((version, files), found)
        return found

    def _read(self) -> dict[str, Any]:
        sessions = self._planted.sessions
        inside = f"({_marks(sessions)})"
        scopes = [VICTIM, *sessions]
        in_scopes = (f"(scope_kind = 'namespace' AND scope_value = ?) OR (scope_kind ="
                     f" 'session' AND scope_value IN {inside})")
        queries = {
            "sessions": ("SELECT * FROM sessions WHERE agent_identity = ? OR session_id IN"
                         f" {inside} ORDER BY session_id", [VICTIM, *sessions]),
            "events": (f"SELECT * FROM conversation_events WHERE session_id IN {inside}"
                       " ORDER BY session_id, sequence", sessions),
            "session state": (f"SELECT * FROM session_state WHERE session_id IN {inside}"
                              " ORDER BY session_id", sessions),
            "chunks": (f"SELECT * FROM chunks WHERE session_id IN {inside} ORDER BY chunk_id",
                       sessions),
            "vectors": ("SELECT chunk_id, agent_identity, session_id, embedding_model FROM"
                        " chunks_vec WHERE agent_identity = ? ORDER BY chunk_id", [VICTIM]),
            "notes": ("SELECT * FROM notes WHERE namespace = ? ORDER BY note_id", [VICTIM]),
            "note names": ("SELECT * FROM note_names WHERE namespace = ? ORDER BY name",
                           [VICTIM]),
            "note tags": ("SELECT * FROM note_tags WHERE namespace = ? ORDER BY note_id, tag",
                          [VICTIM]),
            "facts": ("SELECT * FROM facts WHERE namespace = ? ORDER BY id", [VICTIM]),
            "schedules": ("SELECT * FROM schedules WHERE user_id = ? ORDER BY schedule_id",
                          [VICTIM]),
            "schedule runs": ("SELECT * FROM schedule_runs WHERE schedule_id IN (SELECT"
                              " schedule_id FROM schedules WHERE user_id = ?) OR schedule_id"
                              " = ? ORDER BY run_id", [VICTIM, self._planted.schedule_id]),
            "archives": (f"SELECT * FROM archives WHERE namespace = ? OR session_id IN {inside}"
                         " ORDER BY session_id, marker_sequence", [VICTIM, *sessions]),
            "judgments": (f"SELECT * FROM relevance_judgments WHERE {in_scopes}"
                          " ORDER BY judgment_id", scopes),
            "retrieval log": (f"SELECT * FROM retrieval_log WHERE {in_scopes} ORDER BY log_id",
                              scopes),
        }
        found: dict[str, Any] = {name: self._conn.execute(sql, params)
                                 for name, (sql, params) in queries.items()}
        if self._conn.postgres:  # the full text is the chunks' own generated tsvector
            found["full-text rows"] = [self._conn.execute(
                "SELECT chunk_id, fts::text FROM chunks WHERE scope_token = ? ORDER BY chunk_id",
                [token]) for token in self._tokens]
        else:
            found["full-text rows"] = [sorted(row[0] for row in self._conn.execute(
                "SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ?",
                (f'scope_token : "{token}"',))) for token in self._tokens]
        found["archive files"] = sorted(
            (path.name, path.read_bytes()) for path in self._folder.iterdir()) \
            if self._folder.is_dir() else []
        return found
