-- Row-level security that holds whatever SQL a bound role sends.
--
-- 1. Every function a policy calls, and every function that runs as the owner (SECURITY
--    DEFINER), names its tables with their schema and runs with search_path fixed to
--    "<schema>, pg_temp". Until now they named tables bare under the caller's search_path
--    (or `FROM CURRENT`'s, which still searches pg_temp first), so a TEMP table called
--    memory_roles or sessions, which any role may create, took the real table's place: a
--    role could name its own namespace and read and write another's rows. pg_temp last is
--    searched for nothing the functions name; pg_catalog, not listed, is searched first.
--    The schema is the one this migration runs in (current_schema(), where 0001 created the
--    tables), written into each function's text: hence the dynamic SQL.
-- 2. The pruning function runs as the owner and is no one else's to call.
-- 3. A bound role may create no row that another namespace will need or that answers
--    whether another namespace's id exists (WITH CHECK runs before any unique or foreign
--    key is looked at, so a refusal there says nothing of other rows):
--    - a notes session "memory:<ns>" only for its own namespace;
--    - a chunk whose id is not the one its session (or its note) and text give, or a note
--      chunk of a note not its own; a chunk's id never changes once written;
--    - a vector of a chunk not its own; a note under a session not its own; a name or a tag
--      of a note not its own.
-- 4. memory_meta: bound roles read the memory's shared keys (the embedding model and
--    dimension) and may write only keys of their own namespace, which memory_meta_key()
--    names ("namespace <length>:<namespace> <key>"): a consolidation pass of a bound engine
--    covers its namespace only, so its "last run" is its own.
DO $migration$
DECLARE
    s TEXT := quote_ident(current_schema());
BEGIN
    EXECUTE format($f$
        CREATE OR REPLACE FUNCTION %1$s.memory_role_namespace() RETURNS TEXT
        LANGUAGE sql STABLE SET search_path = %1$s, pg_temp AS $$
            SELECT namespace FROM %1$s.memory_roles WHERE role_name = current_user
        $$;
        CREATE OR REPLACE FUNCTION %1$s.memory_role_sessions() RETURNS SETOF TEXT
        LANGUAGE sql STABLE SET search_path = %1$s, pg_temp AS $$
            SELECT session_id FROM %1$s.sessions
            WHERE agent_identity = %1$s.memory_role_namespace()
        $$;

        CREATE OR REPLACE FUNCTION %1$s.memory_chunk_terms_added() RETURNS trigger
        LANGUAGE plpgsql SECURITY DEFINER SET search_path = %1$s, pg_temp AS $$
        BEGIN
            INSERT INTO %1$s.chunk_terms
            SELECT p.* FROM added a, %1$s.memory_chunk_postings(
                a.session_id, a.fts_rowid, a.fts, a.fts_length) p;
            RETURN NULL;
        END
        $$;
        CREATE OR REPLACE FUNCTION %1$s.memory_chunk_terms_removed() RETURNS trigger
        LANGUAGE plpgsql SECURITY DEFINER SET search_path = %1$s, pg_temp AS $$
        BEGIN
            DELETE FROM %1$s.chunk_terms t USING removed r, LATERAL (
                SELECT '' AS lexeme UNION ALL SELECT u.lexeme FROM unnest(r.fts) u) w
            WHERE t.lexeme = w.lexeme AND t.session_id = r.session_id
              AND t.fts_rowid = r.fts_rowid;
            RETURN NULL;
        END
        $$;

        CREATE OR REPLACE FUNCTION %1$s.memory_prune_chunk_changes(written BIGINT)
        RETURNS void LANGUAGE plpgsql SECURITY DEFINER SET search_path = %1$s, pg_temp AS $$
        DECLARE
            newest BIGINT;
            pruned XID8;
        BEGIN
            IF written = 0 THEN
                RETURN;
            END IF;
            SELECT max(seq) INTO newest FROM %1$s.chunk_changes;
            IF newest / 4096 = (newest - written) / 4096 THEN
                RETURN;
            END IF;
            WITH gone AS (DELETE FROM %1$s.chunk_changes WHERE seq <= newest - 200000
                          RETURNING xid)
            SELECT max(xid) INTO pruned FROM gone;
            IF pruned IS NOT NULL THEN
                UPDATE %1$s.chunk_changes_pruned SET max_xid = greatest(max_xid, pruned);
            END IF;
        END
        $$;
        REVOKE ALL ON FUNCTION %1$s.memory_prune_chunk_changes(BIGINT) FROM PUBLIC;

        CREATE OR REPLACE FUNCTION %1$s.memory_chunk_changes_added() RETURNS trigger
        LANGUAGE plpgsql SECURITY DEFINER SET search_path = %1$s, pg_temp AS $$
        DECLARE
            written BIGINT;
        BEGIN
            INSERT INTO %1$s.chunk_changes(namespace, fts_rowid, op)
            SELECT coalesce(s.agent_identity, ''), a.fts_rowid, 'insert'
            FROM added a LEFT JOIN %1$s.sessions s ON s.session_id = a.session_id;
            GET DIAGNOSTICS written = ROW_COUNT;
            PERFORM %1$s.memory_prune_chunk_changes(written);
            RETURN NULL;
        END
        $$;
        CREATE OR REPLACE FUNCTION %1$s.memory_chunk_changes_removed() RETURNS trigger
        LANGUAGE plpgsql SECURITY DEFINER SET search_path = %1$s, pg_temp AS $$
        DECLARE
            written BIGINT;
        BEGIN
            INSERT INTO %1$s.chunk_changes(namespace, fts_rowid, op)
            SELECT coalesce(s.agent_identity,
                            CASE WHEN s.session_id IS NULL THEN NULL ELSE '' END),
                   r.fts_rowid, 'delete'
            FROM removed r LEFT JOIN %1$s.sessions s ON s.session_id = r.session_id;
            GET DIAGNOSTICS written = ROW_COUNT;
            PERFORM %1$s.memory_prune_chunk_changes(written);
            RETURN NULL;
        END
        $$;
        CREATE OR REPLACE FUNCTION %1$s.memory_chunk_changes_vector() RETURNS trigger
        LANGUAGE plpgsql SECURITY DEFINER SET search_path = %1$s, pg_temp AS $$
        DECLARE
            written BIGINT;
        BEGIN
            INSERT INTO %1$s.chunk_changes(namespace, fts_rowid, op)
            SELECT v.agent_identity, c.fts_rowid, 'vector'
            FROM changed v JOIN %1$s.chunks c ON c.chunk_id = v.chunk_id;
            GET DIAGNOSTICS written = ROW_COUNT;
            PERFORM %1$s.memory_prune_chunk_changes(written);
            RETURN NULL;
        END
        $$;

        -- A message chunk's id (core/storage/messages.py chunk_id_for) or a note chunk's
        -- (core/storage/note_index.py note_chunk_id, whose context is the note's name).
        CREATE FUNCTION %1$s.memory_chunk_id(session_id TEXT, note_id TEXT,
                                             context_text TEXT, content_hash TEXT)
        RETURNS TEXT LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
            SELECT 'chk-' || left(encode(sha256(CASE WHEN note_id IS NULL
                THEN convert_to(session_id, 'UTF8') || '\x00'::bytea
                     || convert_to(content_hash, 'UTF8')
                ELSE convert_to(note_id, 'UTF8') || '\x00'::bytea
                     || convert_to(context_text, 'UTF8') || '\x00'::bytea
                     || convert_to(content_hash, 'UTF8') END), 'hex'), 32)
        $$;
        CREATE FUNCTION %1$s.memory_chunk_id_kept() RETURNS trigger
        LANGUAGE plpgsql SET search_path = %1$s, pg_temp AS $$
        BEGIN
            RAISE EXCEPTION 'a chunk''s id is fixed by its session and text; it cannot change'
                USING ERRCODE = 'check_violation';
        END
        $$;

        -- A bound role's keys in memory_meta: its own, apart from the shared ones. The
        -- owner's (and an unbound role's) keys are the bare key.
        CREATE FUNCTION %1$s.memory_meta_key(base TEXT) RETURNS TEXT
        LANGUAGE sql STABLE SET search_path = %1$s, pg_temp AS $$
            SELECT coalesce('namespace ' || length(ns) || ':' || ns || ' ', '') || base
            FROM (SELECT %1$s.memory_role_namespace() AS ns) r
        $$;
    $f$, s);
END
$migration$;

-- (Policy expressions name their functions and tables by reference, not by a name looked
-- up when they run: only the functions' bodies needed the schema.)
ALTER POLICY namespace_rows ON sessions
    WITH CHECK (agent_identity = (SELECT memory_role_namespace())
                AND (left(session_id, 7) <> 'memory:'
                     OR session_id = 'memory:' || (SELECT memory_role_namespace())));

CREATE POLICY derived_id ON chunks AS RESTRICTIVE FOR INSERT
    WITH CHECK (chunk_id = memory_chunk_id(session_id, note_id, context_text, content_hash)
                AND (note_id IS NULL
                     OR EXISTS (SELECT 1 FROM notes n WHERE n.note_id = chunks.note_id)));
CREATE TRIGGER chunk_id_kept BEFORE UPDATE OF chunk_id ON chunks FOR EACH ROW
    WHEN (OLD.chunk_id IS DISTINCT FROM NEW.chunk_id) EXECUTE FUNCTION memory_chunk_id_kept();

CREATE POLICY own_chunk ON chunks_vec AS RESTRICTIVE USING (true)
    WITH CHECK (EXISTS (SELECT 1 FROM chunks c WHERE c.chunk_id = chunks_vec.chunk_id
                                                 AND c.session_id = chunks_vec.session_id));

ALTER POLICY namespace_rows ON notes
    WITH CHECK (namespace = (SELECT memory_role_namespace())
                AND session_id IN (SELECT memory_role_sessions()));
ALTER POLICY namespace_rows ON note_names
    WITH CHECK (namespace = (SELECT memory_role_namespace())
                AND EXISTS (SELECT 1 FROM notes n WHERE n.note_id = note_names.note_id));
ALTER POLICY namespace_rows ON note_tags
    WITH CHECK (namespace = (SELECT memory_role_namespace())
                AND EXISTS (SELECT 1 FROM notes n WHERE n.note_id = note_tags.note_id));

ALTER TABLE memory_meta ENABLE ROW LEVEL SECURITY;
CREATE POLICY shared_or_own ON memory_meta FOR SELECT
    USING (left(key, 10) <> 'namespace ' OR starts_with(key, memory_meta_key('')));
CREATE POLICY own_keys ON memory_meta FOR INSERT
    WITH CHECK (memory_role_namespace() IS NOT NULL AND starts_with(key, memory_meta_key('')));
CREATE POLICY own_keys_changed ON memory_meta FOR UPDATE
    USING (memory_role_namespace() IS NOT NULL AND starts_with(key, memory_meta_key('')))
    WITH CHECK (memory_role_namespace() IS NOT NULL AND starts_with(key, memory_meta_key('')));
