-- A session's query reads its candidates' chunk rows (~80 of them). The chunks table keeps
-- rows in insertion order, so in a file where many conversations were written at once a
-- session's rows sit on as many pages as there are rows, scattered over the whole file: at
-- 1M chunks, with cold pages, those random reads are most of a session query. This index holds
-- every column a query reads, ordered by session, so a session's rows are a few adjacent
-- pages read in one range (core/storage/search.py, session_chunks).
CREATE INDEX chunks_session_rows ON chunks(
    session_id, fts_rowid, chunk_id, sequence_start, sequence_end, metadata_json,
    chunk_text, context_text);
