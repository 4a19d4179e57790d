-- A chunk's created_at (its first message's time) is read with the rest of its row, for the
-- date boost when the message's metadata names no date (core/storage/chunk_rows.py). The
-- index a session's query reads its rows from (0009) holds every column a query reads, so it
-- gains this one: without it, each row would be looked up in the table again.
DROP INDEX chunks_session_rows;
CREATE INDEX chunks_session_rows ON chunks(
    session_id, fts_rowid, chunk_id, sequence_start, sequence_end, metadata_json,
    chunk_text, context_text, created_at);
