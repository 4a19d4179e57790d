-- What the workbench itself needs (DESIGN.md "Storage"): a log of every query from any front
-- end, so a developer can replay exactly what the agent recalled, and relevance judgments,
-- so recall can be measured on the queries that matter. Neither references chunks by
-- foreign key: chunk ids are stable (session + content hash), and a judgment or a log entry
-- outlives a re-import.

CREATE TABLE retrieval_log (
    log_id       INTEGER PRIMARY KEY AUTOINCREMENT,
    created_at   TEXT NOT NULL,
    caller       TEXT NOT NULL,
    scope_kind   TEXT NOT NULL CHECK (scope_kind IN ('session', 'namespace')),
    scope_value  TEXT NOT NULL,
    query        TEXT NOT NULL,
    params_json  TEXT NOT NULL,
    results_json TEXT NOT NULL,
    timings_json TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX retrieval_log_recent ON retrieval_log(created_at DESC);
CREATE INDEX retrieval_log_by_scope ON retrieval_log(scope_kind, scope_value, created_at DESC);
CREATE INDEX retrieval_log_by_caller ON retrieval_log(caller, created_at DESC);

CREATE TABLE relevance_judgments (
    judgment_id INTEGER PRIMARY KEY AUTOINCREMENT,
    scope_kind  TEXT NOT NULL CHECK (scope_kind IN ('session', 'namespace')),
    scope_value TEXT NOT NULL,
    query       TEXT NOT NULL,
    chunk_id    TEXT NOT NULL,
    grade       INTEGER NOT NULL CHECK (grade BETWEEN 0 AND 3),
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL,
    UNIQUE (scope_kind, scope_value, query, chunk_id)
);
