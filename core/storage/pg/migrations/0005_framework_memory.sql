-- The memory of agents that keep it through their framework (core/integrations/), as
-- SQLite's migration 0011 keeps it: see there for what each table holds. Every table is a
-- namespace table (core/storage/pg/roles.py): a bound role reads and writes the rows of its
-- own namespace's sessions only.
CREATE TABLE framework_items (
    session_id TEXT COLLATE "C" NOT NULL REFERENCES sessions(session_id) ON DELETE CASCADE,
    sequence   BIGINT NOT NULL,
    framework  TEXT COLLATE "C" NOT NULL CHECK (framework IN ('langgraph', 'openai-agents')),
    item_key   TEXT COLLATE "C" NOT NULL,
    raw_json   TEXT COLLATE "C",
    removed_at TEXT COLLATE "C",
    PRIMARY KEY (session_id, sequence),
    UNIQUE (session_id, framework, item_key)
);

CREATE TABLE langgraph_checkpoints (
    session_id           TEXT COLLATE "C" NOT NULL
                         REFERENCES sessions(session_id) ON DELETE CASCADE,
    checkpoint_ns        TEXT COLLATE "C" NOT NULL DEFAULT '',
    checkpoint_id        TEXT COLLATE "C" NOT NULL,
    parent_checkpoint_id TEXT COLLATE "C",
    checkpoint_type      TEXT COLLATE "C" NOT NULL,
    checkpoint           BYTEA NOT NULL,
    metadata_json        TEXT COLLATE "C" NOT NULL DEFAULT '{}',
    created_at           TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (session_id, checkpoint_ns, checkpoint_id)
);

CREATE TABLE langgraph_writes (
    session_id    TEXT COLLATE "C" NOT NULL REFERENCES sessions(session_id) ON DELETE CASCADE,
    checkpoint_ns TEXT COLLATE "C" NOT NULL DEFAULT '',
    checkpoint_id TEXT COLLATE "C" NOT NULL,
    task_id       TEXT COLLATE "C" NOT NULL,
    task_path     TEXT COLLATE "C" NOT NULL DEFAULT '',
    idx           INTEGER NOT NULL,
    channel       TEXT COLLATE "C" NOT NULL,
    value_type    TEXT COLLATE "C" NOT NULL,
    value         BYTEA NOT NULL,
    PRIMARY KEY (session_id, checkpoint_ns, checkpoint_id, task_id, idx)
);

ALTER TABLE framework_items ENABLE ROW LEVEL SECURITY;
CREATE POLICY namespace_rows ON framework_items
    USING (session_id IN (SELECT memory_role_sessions()));
ALTER TABLE langgraph_checkpoints ENABLE ROW LEVEL SECURITY;
CREATE POLICY namespace_rows ON langgraph_checkpoints
    USING (session_id IN (SELECT memory_role_sessions()));
ALTER TABLE langgraph_writes ENABLE ROW LEVEL SECURITY;
CREATE POLICY namespace_rows ON langgraph_writes
    USING (session_id IN (SELECT memory_role_sessions()));
