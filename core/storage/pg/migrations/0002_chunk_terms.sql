-- Full text's term statistics, kept as the chunks are written (core/storage/pg/fts_bm25.py).
--
-- bm25 needs, for a query's words, how many chunks of the scope hold each word, the scope's
-- chunk count and mean length, and each matched chunk's count of each word. Read from the
-- tsvectors, that is every chunk holding a common word, detoasted and unnested: 560 ms a
-- namespace query over 20k chunks (workbench bench query). Here each chunk's words are rows
-- of a B-tree (its postings), read by word and session, so a word's counts are a range of
-- one index: a word's document frequency is counted, never scanned for, and a chunk's
-- count of a word is one index entry.
--
-- One row per (word, chunk): f_text and f_context are the positions the chunk's tsvector
-- holds for the word with weight A (its text) and B (its context); doc_length is the chunk's
-- fts_length. The row with the empty word (no lexeme is empty) stands for the chunk itself,
-- so a scope's chunk count and total length are a range of the same index. The index
-- carries every column, so a search reads the index alone.
--
-- Per-session counts of each word, kept alongside by an upsert, would make a namespace's
-- document frequencies a sum over its sessions instead of a range of postings (10-40 ms a
-- query over 20k chunks on a loaded machine), but cost 0.7 ms more a stored chunk, and
-- far more in a bulk transaction, whose repeated updates of one row chain its versions.
CREATE TABLE chunk_terms (
    lexeme     TEXT COLLATE "C" NOT NULL,
    session_id TEXT COLLATE "C" NOT NULL,
    fts_rowid  BIGINT NOT NULL,
    f_text     INTEGER NOT NULL,
    f_context  INTEGER NOT NULL,
    doc_length INTEGER NOT NULL,
    PRIMARY KEY (lexeme, session_id, fts_rowid) INCLUDE (f_text, f_context, doc_length)
);

-- A chunk's postings: the empty word, then one row per lexeme of its tsvector.
CREATE FUNCTION memory_chunk_postings(chunk_session TEXT, chunk_rowid BIGINT,
                                      chunk_fts TSVECTOR, chunk_length INTEGER)
RETURNS TABLE (lexeme TEXT, session_id TEXT, fts_rowid BIGINT, f_text INTEGER,
               f_context INTEGER, doc_length INTEGER)
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT ''::text, chunk_session, chunk_rowid, 0, 0, chunk_length
    UNION ALL
    SELECT u.lexeme, chunk_session, chunk_rowid,
           coalesce(cardinality(array_positions(u.weights, 'A')), 0),
           coalesce(cardinality(array_positions(u.weights, 'B')), 0), chunk_length
    FROM unnest(chunk_fts) u
$$;

-- The triggers keep the postings in the chunks' transaction, once per statement (a bulk
-- import writes its postings in one INSERT). They run as the schema's owner (SECURITY
-- DEFINER): a role bound to a namespace reads the postings through the policy below but
-- cannot write them except by writing chunks. Chunks' text never changes after insert
-- (only their metadata, sequence range and embedding state do), so inserts and deletes are
-- all there is to follow.
CREATE FUNCTION memory_chunk_terms_added() RETURNS trigger LANGUAGE plpgsql
SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
    INSERT INTO chunk_terms
    SELECT p.* FROM added a,
         memory_chunk_postings(a.session_id, a.fts_rowid, a.fts, a.fts_length) p;
    RETURN NULL;
END
$$;
CREATE FUNCTION memory_chunk_terms_removed() RETURNS trigger LANGUAGE plpgsql
SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
    DELETE FROM chunk_terms t USING removed r, LATERAL (
        SELECT '' AS lexeme UNION ALL SELECT u.lexeme FROM unnest(r.fts) u) w
    WHERE t.lexeme = w.lexeme AND t.session_id = r.session_id AND t.fts_rowid = r.fts_rowid;
    RETURN NULL;
END
$$;
CREATE TRIGGER chunk_terms_added AFTER INSERT ON chunks REFERENCING NEW TABLE AS added
    FOR EACH STATEMENT EXECUTE FUNCTION memory_chunk_terms_added();
CREATE TRIGGER chunk_terms_removed AFTER DELETE ON chunks REFERENCING OLD TABLE AS removed
    FOR EACH STATEMENT EXECUTE FUNCTION memory_chunk_terms_removed();

INSERT INTO chunk_terms
SELECT p.* FROM chunks c, memory_chunk_postings(c.session_id, c.fts_rowid, c.fts,
                                                c.fts_length) p;

-- A bound role reads the postings of its namespace's sessions only, as it reads chunks.
-- Granted to every role rather than to each bound one (pg grant), so roles granted before
-- this table existed read it too; a role bound to no namespace sees no row of it. No
-- memory_changed trigger: the postings change only when chunks do, which notifies.
ALTER TABLE chunk_terms ENABLE ROW LEVEL SECURITY;
CREATE POLICY namespace_rows ON chunk_terms
    USING (session_id IN (SELECT memory_role_sessions()));
GRANT SELECT ON chunk_terms TO PUBLIC;
