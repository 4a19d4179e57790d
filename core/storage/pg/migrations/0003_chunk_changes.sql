-- A change log of chunks, for the indexes each engine process derives in memory from the
-- namespaces it queries (core/storage/pg/derived.py), as SQLite's migration 0008 keeps one
-- for the file's: every write that adds or removes a chunk, or writes or drops its vector,
-- appends the chunk's fts_rowid here in its own transaction, through statement triggers, so
-- another process's (another machine's) writes are logged exactly as this one's.
--
-- A seq is NOT in commit order on PostgreSQL (a transaction holding seq 5 may commit after
-- one holding seq 6), so a reader cannot keep "the last seq applied". Each entry carries
-- its transaction's id instead (xid): a reader remembers which transactions the snapshot it
-- last read the log in could not see (those in progress, and those at or above its xmax)
-- and next reads those transactions' entries (core/storage/pg/derived.py).
--
-- namespace is the chunk's agent ('' for none); NULL when its session was deleted in the
-- same statement (a cascade), where nothing says whose it was: such an entry names a row
-- number only, and every reader drops that row if it holds it.
CREATE TABLE chunk_changes (
    seq       BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    xid       XID8 NOT NULL DEFAULT pg_current_xact_id(),
    namespace TEXT COLLATE "C",
    fts_rowid BIGINT NOT NULL,
    op        TEXT COLLATE "C" NOT NULL CHECK (op IN ('insert', 'delete', 'vector'))
);
CREATE INDEX chunk_changes_by_xid ON chunk_changes(xid);

-- The greatest xid of any entry pruned: a reader whose oldest unseen transaction is at or
-- below it may have lost entries it had not read, and rebuilds. One row, written only by a pruning statement.
CREATE TABLE chunk_changes_pruned (
    one    BOOLEAN PRIMARY KEY DEFAULT true CHECK (one),
    max_xid XID8 NOT NULL
);
INSERT INTO chunk_changes_pruned(max_xid) VALUES ('0'::xid8);

-- Pruned as it is written: when a statement's entries cross a multiple of 4,096 seqs, the
-- entries more than 200,000 seqs old go (a reader that far behind rebuilds instead).
CREATE FUNCTION memory_prune_chunk_changes(written BIGINT) RETURNS void LANGUAGE plpgsql
SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
    newest BIGINT;
    pruned XID8;
BEGIN
    IF written = 0 THEN
        RETURN;
    END IF;
    SELECT max(seq) INTO newest FROM chunk_changes;
    IF newest / 4096 = (newest - written) / 4096 THEN
        RETURN;
    END IF;
    WITH gone AS (DELETE FROM chunk_changes WHERE seq <= newest - 200000 RETURNING xid)
    SELECT max(xid) INTO pruned FROM gone;
    IF pruned IS NOT NULL THEN
        UPDATE chunk_changes_pruned SET max_xid = greatest(max_xid, pruned);
    END IF;
END
$$;

CREATE FUNCTION memory_chunk_changes_added() RETURNS trigger LANGUAGE plpgsql
SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
    written BIGINT;
BEGIN
    INSERT INTO chunk_changes(namespace, fts_rowid, op)
    SELECT coalesce(s.agent_identity, ''), a.fts_rowid, 'insert'
    FROM added a LEFT JOIN sessions s ON s.session_id = a.session_id;
    GET DIAGNOSTICS written = ROW_COUNT;
    PERFORM memory_prune_chunk_changes(written);
    RETURN NULL;
END
$$;
CREATE FUNCTION memory_chunk_changes_removed() RETURNS trigger LANGUAGE plpgsql
SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
    written BIGINT;
BEGIN
    INSERT INTO chunk_changes(namespace, fts_rowid, op)
    SELECT coalesce(s.agent_identity, CASE WHEN s.session_id IS NULL THEN NULL ELSE '' END),
           r.fts_rowid, 'delete'
    FROM removed r LEFT JOIN sessions s ON s.session_id = r.session_id;
    GET DIAGNOSTICS written = ROW_COUNT;
    PERFORM memory_prune_chunk_changes(written);
    RETURN NULL;
END
$$;
-- A vector written, replaced or dropped (chunks_vec's rows; its delete by a chunk's cascade
-- finds no chunk, whose own delete is logged).
CREATE FUNCTION memory_chunk_changes_vector() RETURNS trigger LANGUAGE plpgsql
SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
    written BIGINT;
BEGIN
    INSERT INTO chunk_changes(namespace, fts_rowid, op)
    SELECT v.agent_identity, c.fts_rowid, 'vector'
    FROM changed v JOIN chunks c ON c.chunk_id = v.chunk_id;
    GET DIAGNOSTICS written = ROW_COUNT;
    PERFORM memory_prune_chunk_changes(written);
    RETURN NULL;
END
$$;
CREATE TRIGGER chunk_changes_added AFTER INSERT ON chunks REFERENCING NEW TABLE AS added
    FOR EACH STATEMENT EXECUTE FUNCTION memory_chunk_changes_added();
CREATE TRIGGER chunk_changes_removed AFTER DELETE ON chunks REFERENCING OLD TABLE AS removed
    FOR EACH STATEMENT EXECUTE FUNCTION memory_chunk_changes_removed();
CREATE TRIGGER chunk_changes_vector_added AFTER INSERT ON chunks_vec
    REFERENCING NEW TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION memory_chunk_changes_vector();
CREATE TRIGGER chunk_changes_vector_updated AFTER UPDATE ON chunks_vec
    REFERENCING NEW TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION memory_chunk_changes_vector();
CREATE TRIGGER chunk_changes_vector_removed AFTER DELETE ON chunks_vec
    REFERENCING OLD TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION memory_chunk_changes_vector();

-- A bound role reads its namespace's entries, and the ones that name no namespace (a row
-- number, nothing of the chunk). No memory_changed trigger: entries are written only when
-- chunks or vectors change, which notifies.
ALTER TABLE chunk_changes ENABLE ROW LEVEL SECURITY;
CREATE POLICY namespace_rows ON chunk_changes
    USING (namespace IS NULL OR namespace = (SELECT memory_role_namespace()));
GRANT SELECT ON chunk_changes TO PUBLIC;
GRANT SELECT ON chunk_changes_pruned TO PUBLIC;
