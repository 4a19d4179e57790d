-- A change log of chunks, for the indexes derived from the file (core/storage/derived/):
-- each write that adds, removes or re-embeds a chunk appends its fts_rowid here in the same
-- transaction, so an index kept outside the file (by this process or another) learns what
-- changed since it last looked by reading the entries after its watermark. fts_rowid is
-- max+1, so a deleted rowid can come back: the log keeps its delete before its insert.
-- AUTOINCREMENT: a seq is never handed out twice, even once the entries before it are pruned.
CREATE TABLE chunk_changes (
    seq       INTEGER PRIMARY KEY AUTOINCREMENT,
    fts_rowid INTEGER,
    op        TEXT NOT NULL CHECK (op IN ('insert', 'delete', 'update', 'vector', 'reset'))
);

CREATE TRIGGER chunk_changes_insert AFTER INSERT ON chunks BEGIN
    INSERT INTO chunk_changes(fts_rowid, op) VALUES (new.fts_rowid, 'insert');
END;

CREATE TRIGGER chunk_changes_delete AFTER DELETE ON chunks BEGIN
    INSERT INTO chunk_changes(fts_rowid, op) VALUES (old.fts_rowid, 'delete');
END;

-- An edit of the indexed text: a derived full-text index reads the row again.
CREATE TRIGGER chunk_changes_update AFTER UPDATE OF chunk_text, scope_token, context_text
ON chunks BEGIN
    INSERT INTO chunk_changes(fts_rowid, op) VALUES (new.fts_rowid, 'update');
END;

-- vec0 takes no triggers; a chunk's vector is written (or replaced, by reindex) in the
-- transaction that marks it 'done', so that mark stands for the vector.
CREATE TRIGGER chunk_changes_vector AFTER UPDATE OF embedding_status ON chunks
WHEN new.embedding_status = 'done' BEGIN
    INSERT INTO chunk_changes(fts_rowid, op) VALUES (new.fts_rowid, 'vector');
END;

-- Pruned as it is written, once every 1,024 entries, to the newest 100,000: an index whose
-- watermark is older than the oldest entry kept rebuilds from the file.
CREATE TRIGGER chunk_changes_prune AFTER INSERT ON chunk_changes
WHEN new.seq % 1024 = 0 BEGIN
    DELETE FROM chunk_changes WHERE seq <= new.seq - 100000;
END;
