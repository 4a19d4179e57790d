-- Seed 001's tables with its names and columns, plus what seeds 000/003 and the engine need:
-- importance and consolidation per event, embedding status per chunk, a stable FTS key and a
-- scope token per chunk. The sqlite-vec table chunks_vec is created at open, once the
-- embedding model's dimension is known (vec0 fixes it at creation).

CREATE TABLE memory_meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

CREATE TABLE sessions (
    session_id     TEXT PRIMARY KEY,
    agent_identity TEXT,
    created_at     TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
    updated_at     TIMESTAMP DEFAULT CURRENT_TIMESTAMP
);
CREATE INDEX sessions_by_activity ON sessions(updated_at DESC);
CREATE INDEX sessions_by_agent ON sessions(agent_identity, updated_at DESC);

CREATE TABLE conversation_events (
    session_id      TEXT NOT NULL REFERENCES sessions(session_id) ON DELETE CASCADE,
    sequence        INTEGER NOT NULL,
    payload_json    TEXT NOT NULL,
    created_at      TIMESTAMP DEFAULT CURRENT_TIMESTAMP,
    role            TEXT NOT NULL DEFAULT 'user',
    importance      REAL NOT NULL DEFAULT 0.5,
    consolidated_at TEXT,
    PRIMARY KEY (session_id, sequence)
);
CREATE INDEX events_salient ON conversation_events(session_id, importance)
    WHERE importance >= 0.85;

CREATE TABLE session_state (
    session_id TEXT PRIMARY KEY REFERENCES sessions(session_id) ON DELETE CASCADE,
    state_json TEXT NOT NULL DEFAULT '{}',
    updated_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP
);

CREATE TABLE files (
    file_id       INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id    TEXT NOT NULL REFERENCES sessions(session_id) ON DELETE CASCADE,
    source_uri    TEXT NOT NULL,
    content_hash  TEXT NOT NULL,
    metadata_json TEXT DEFAULT '{}',
    created_at    TIMESTAMP DEFAULT CURRENT_TIMESTAMP
);
CREATE INDEX files_by_session ON files(session_id, source_uri);

-- fts_rowid is the chunk's key in chunks_fts: the implicit rowid of a table without an
-- INTEGER PRIMARY KEY may change on VACUUM, which would silently desynchronise the index.
-- scope_token ("s<hash of session>") is indexed in the FTS row and ANDed into MATCH, so a
-- session's full-text query costs what the session holds, not what the file holds.
CREATE TABLE chunks (
    chunk_id           TEXT PRIMARY KEY,
    session_id         TEXT NOT NULL REFERENCES sessions(session_id) ON DELETE CASCADE,
    chunk_text         TEXT NOT NULL,
    content_hash       TEXT NOT NULL,
    sequence_start     INTEGER NOT NULL,
    sequence_end       INTEGER NOT NULL,
    metadata_json      TEXT DEFAULT '{}',
    fts_rowid          INTEGER NOT NULL UNIQUE,
    scope_token        TEXT NOT NULL,
    embedding_status   TEXT NOT NULL DEFAULT 'pending'
                       CHECK (embedding_status IN ('pending', 'done', 'failed')),
    embedding_error    TEXT,
    embedding_attempts INTEGER NOT NULL DEFAULT 0,
    created_at         TEXT
);
CREATE INDEX chunks_by_session ON chunks(session_id, sequence_end);
CREATE INDEX chunks_by_hash ON chunks(session_id, content_hash);
CREATE INDEX chunks_backlog ON chunks(fts_rowid) WHERE embedding_status = 'pending';

CREATE VIRTUAL TABLE chunks_fts USING fts5(
    chunk_text,
    scope_token,
    content = 'chunks',
    content_rowid = 'fts_rowid',
    tokenize = 'porter unicode61 remove_diacritics 2'
);

-- New chunks are added to chunks_fts by the storage layer in the same transaction that
-- inserts them (core/storage/events.py), not by an AFTER INSERT trigger: FTS5 flushes its
-- pending terms at the savepoint each trigger statement opens, so a trigger costs ~23 us a
-- row against ~5 us for the direct insert. Deletes and edits stay on triggers, so cascades
-- from sessions and any UPDATE keep the index in step.
CREATE TRIGGER chunks_fts_delete AFTER DELETE ON chunks BEGIN
    INSERT INTO chunks_fts(chunks_fts, rowid, chunk_text, scope_token)
    VALUES ('delete', old.fts_rowid, old.chunk_text, old.scope_token);
END;

CREATE TRIGGER chunks_fts_update AFTER UPDATE OF chunk_text, scope_token, fts_rowid ON chunks
BEGIN
    INSERT INTO chunks_fts(chunks_fts, rowid, chunk_text, scope_token)
    VALUES ('delete', old.fts_rowid, old.chunk_text, old.scope_token);
    INSERT INTO chunks_fts(rowid, chunk_text, scope_token)
    VALUES (new.fts_rowid, new.chunk_text, new.scope_token);
END;

CREATE TABLE schedules (
    schedule_id          TEXT PRIMARY KEY,
    user_id              TEXT NOT NULL,
    name                 TEXT,
    goal                 TEXT NOT NULL,
    cadence_json         TEXT NOT NULL,
    notification_policy  TEXT NOT NULL DEFAULT 'always',
    status               TEXT NOT NULL DEFAULT 'active',
    created_at           TEXT NOT NULL,
    updated_at           TEXT NOT NULL,
    next_run_at          TEXT,
    last_run_at          TEXT,
    last_run_status      TEXT,
    consecutive_failures INTEGER NOT NULL DEFAULT 0,
    channel_id           TEXT,
    channel_context_id   TEXT
);
CREATE INDEX schedules_by_user ON schedules(user_id);
CREATE INDEX schedules_due ON schedules(next_run_at) WHERE status = 'active';
CREATE INDEX schedules_by_user_status ON schedules(user_id, status);
CREATE INDEX schedules_by_user_name ON schedules(user_id, name);

CREATE TABLE schedule_runs (
    run_id         TEXT PRIMARY KEY,
    schedule_id    TEXT NOT NULL,
    started_at     TEXT NOT NULL,
    finished_at    TEXT NOT NULL,
    status         TEXT NOT NULL,
    output_summary TEXT,
    output         TEXT,
    turn_count     INTEGER NOT NULL DEFAULT 0,
    cost           REAL NOT NULL DEFAULT 0.0,
    notified       INTEGER NOT NULL DEFAULT 0,
    FOREIGN KEY (schedule_id) REFERENCES schedules(schedule_id) ON DELETE CASCADE
);
CREATE INDEX schedule_runs_history ON schedule_runs(schedule_id, started_at DESC);
