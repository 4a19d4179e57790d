-- Two retrieval changes that reshape a chunk's full-text row (core/storage/fts_rows.py):
--
-- * Conversational context: each chunk keeps the text of the two messages before it
--   (each cut at 400 characters, joined by char(30)) in chunks.context_text, indexed at
--   half weight and blended into the chunk's vector. A reply's words rarely say what it
--   answers; its question does.
-- * Session terms: the chunk's words again, glued to a prefix made from the session id,
--   so a session's MATCH walks only that session's doclists (its cost follows the session,
--   not the file).
--
-- chunks_fts becomes contentless (contentless_delete=1): it never hands back text (results
-- are read from chunks), and a row is deleted by rowid alone. Chunk text is never edited in
-- place (a note's new content is new chunks), so there is no update trigger.
--
-- Existing chunks get their context from the chunks before them and a rebuilt index. Their
-- vectors were made without context; `workbench reindex` re-embeds them with it.

ALTER TABLE chunks ADD COLUMN context_text TEXT NOT NULL DEFAULT '';
CREATE INDEX chunks_by_start ON chunks(session_id, sequence_start);

WITH firsts AS (
    SELECT session_id, sequence_start, chunk_text,
           row_number() OVER (PARTITION BY session_id, sequence_start ORDER BY fts_rowid) AS n
    FROM chunks
), messages AS (
    SELECT session_id, sequence_start,
           lag(substr(chunk_text, 1, 400), 1) OVER w AS previous_1,
           lag(substr(chunk_text, 1, 400), 2) OVER w AS previous_2
    FROM firsts WHERE n = 1
    WINDOW w AS (PARTITION BY session_id ORDER BY sequence_start)
)
UPDATE chunks SET context_text = trim(
    coalesce(m.previous_2, '') || char(30) || coalesce(m.previous_1, ''), char(30))
FROM messages m
WHERE m.session_id = chunks.session_id AND m.sequence_start = chunks.sequence_start;

DROP TRIGGER chunks_fts_delete;
DROP TRIGGER chunks_fts_update;
DROP TABLE chunks_fts;

CREATE VIRTUAL TABLE chunks_fts USING fts5(
    chunk_text,
    scope_token,
    context,
    session_text,
    session_context,
    content = '',
    contentless_delete = 1,
    tokenize = 'porter unicode61 remove_diacritics 2'
);

INSERT INTO chunks_fts(rowid, chunk_text, scope_token, context, session_text, session_context)
SELECT fts_rowid, chunk_text, scope_token, context_text,
       memory_prefixed(memory_session_prefix(session_id), chunk_text),
       memory_prefixed(memory_session_prefix(session_id), context_text)
FROM chunks;

CREATE TRIGGER chunks_fts_delete AFTER DELETE ON chunks BEGIN
    DELETE FROM chunks_fts WHERE rowid = old.fts_rowid;
END;
