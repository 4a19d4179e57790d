-- The memory of agents that keep it through their framework (core/integrations/): LangGraph's
-- checkpointer and the OpenAI Agents SDK's session. A LangGraph thread and an Agents SDK
-- session are each one of our sessions, so their messages are conversation_events the app,
-- retrieval and summaries read as any other; these tables hold what the frameworks need back
-- exactly as they gave it.

-- One row per framework item that became an event: a LangGraph message (item_key is the
-- message's id, so a message that many checkpoints repeat is stored once) or an Agents SDK
-- item (raw_json is the item's JSON as the SDK gave it, returned byte for byte). An item
-- the framework removed (a RemoveMessage, pop_item) keeps its event and is marked here.
CREATE TABLE framework_items (
    session_id TEXT NOT NULL REFERENCES sessions(session_id) ON DELETE CASCADE,
    sequence   INTEGER NOT NULL,
    framework  TEXT NOT NULL CHECK (framework IN ('langgraph', 'openai-agents')),
    item_key   TEXT NOT NULL,
    raw_json   TEXT,
    removed_at TEXT,
    PRIMARY KEY (session_id, sequence),
    UNIQUE (session_id, framework, item_key)
);

-- LangGraph checkpoints of a thread (session_id is the thread id), serialized by the
-- framework's own serializer: (type, bytes) pairs, stored as given.
CREATE TABLE langgraph_checkpoints (
    session_id           TEXT NOT NULL REFERENCES sessions(session_id) ON DELETE CASCADE,
    checkpoint_ns        TEXT NOT NULL DEFAULT '',
    checkpoint_id        TEXT NOT NULL,
    parent_checkpoint_id TEXT,
    checkpoint_type      TEXT NOT NULL,
    checkpoint           BLOB NOT NULL,
    metadata_json        TEXT NOT NULL DEFAULT '{}',
    created_at           TEXT NOT NULL,
    PRIMARY KEY (session_id, checkpoint_ns, checkpoint_id)
);

-- Pending writes of a checkpoint's tasks.
CREATE TABLE langgraph_writes (
    session_id    TEXT NOT NULL REFERENCES sessions(session_id) ON DELETE CASCADE,
    checkpoint_ns TEXT NOT NULL DEFAULT '',
    checkpoint_id TEXT NOT NULL,
    task_id       TEXT NOT NULL,
    task_path     TEXT NOT NULL DEFAULT '',
    idx           INTEGER NOT NULL,
    channel       TEXT NOT NULL,
    value_type    TEXT NOT NULL,
    value         BLOB NOT NULL,
    PRIMARY KEY (session_id, checkpoint_ns, checkpoint_id, task_id, idx)
);
