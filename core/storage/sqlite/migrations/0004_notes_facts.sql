-- Notes, their names and tags, and facts: the memory an agent writes on purpose (seed 001
-- "Note Storage Pipeline" and "Note Metadata", seeds 002 and 004, seed 000 "facts").
--
-- A note's searchable text lives where a message's does: its event in conversation_events
-- and its chunks in chunks / chunks_fts / chunks_vec, under its namespace's session
-- "memory:{namespace}" (core/storage/notes.py). The tables below hold what the index does
-- not: the note's identity and fields, the names and aliases it answers to, its tags.

CREATE TABLE notes (
    note_id        TEXT PRIMARY KEY,
    namespace      TEXT NOT NULL,
    session_id     TEXT NOT NULL REFERENCES sessions(session_id) ON DELETE CASCADE,
    name           TEXT NOT NULL,
    content        TEXT NOT NULL,
    kind           TEXT NOT NULL DEFAULT 'Note' CHECK (kind IN ('Note', 'Archive')),
    category       TEXT NOT NULL DEFAULT 'core'
                   CHECK (category IN ('core', 'daily', 'conversation')),
    tags_json      TEXT NOT NULL DEFAULT '[]',
    source         TEXT NOT NULL DEFAULT '',
    importance     REAL NOT NULL DEFAULT 0.5 CHECK (importance BETWEEN 0 AND 1),
    event_sequence INTEGER,
    created_at     TEXT NOT NULL,
    updated_at     TEXT NOT NULL,
    schema_version INTEGER NOT NULL DEFAULT 1,
    UNIQUE (namespace, name)
);
-- Listing a namespace by name, by category or kind then name, or by recent change; every
-- page of 100k notes is an index range, never a sort of the namespace.
CREATE INDEX notes_by_category ON notes(namespace, category, name);
CREATE INDEX notes_by_kind ON notes(namespace, kind, name);
CREATE INDEX notes_by_update ON notes(namespace, updated_at DESC, note_id);
CREATE INDEX notes_by_session ON notes(session_id);

-- Every name a note answers to in its namespace: its own (is_alias 0) and its aliases. One
-- primary key over both makes "a name means one note" the database's rule, not the code's.
CREATE TABLE note_names (
    namespace TEXT NOT NULL,
    name      TEXT NOT NULL,
    note_id   TEXT NOT NULL REFERENCES notes(note_id) ON DELETE CASCADE,
    is_alias  INTEGER NOT NULL CHECK (is_alias IN (0, 1)),
    PRIMARY KEY (namespace, name)
) WITHOUT ROWID;
CREATE INDEX note_names_by_note ON note_names(note_id);

CREATE TABLE note_tags (
    note_id   TEXT NOT NULL REFERENCES notes(note_id) ON DELETE CASCADE,
    namespace TEXT NOT NULL,
    tag       TEXT NOT NULL,
    PRIMARY KEY (note_id, tag)
) WITHOUT ROWID;
CREATE INDEX note_tags_by_tag ON note_tags(namespace, tag, note_id);

-- Which note a chunk indexes (NULL for a message's chunk). The partial index costs messages
-- nothing; removing or rewriting a note finds its chunks through it.
ALTER TABLE chunks ADD COLUMN note_id TEXT;
CREATE INDEX chunks_by_note ON chunks(note_id) WHERE note_id IS NOT NULL;

-- Seed 000's facts with its columns first, then the namespace that isolates them.
CREATE TABLE facts (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    category   TEXT NOT NULL,
    key        TEXT NOT NULL,
    value      TEXT NOT NULL,
    source     TEXT NOT NULL CHECK (source IN ('agent', 'user')),
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    namespace  TEXT NOT NULL,
    UNIQUE (namespace, category, key)
);
