-- Compaction archives (seed 004 "Compaction", seed 002 "Conversation Archives").
--
-- A compaction writes, in one transaction: an Archive note (its summary, searchable like
-- any note), a compact marker event at the end of the conversation, consolidated_at on the
-- events it folded, and one row here that ties them together. The markdown copy of the
-- archive is written after the commit; file_path stays NULL until it is, so a crash between
-- the two is repaired by writing the file from the note, never by summarising again.

CREATE TABLE archives (
    session_id      TEXT NOT NULL REFERENCES sessions(session_id) ON DELETE CASCADE,
    marker_sequence INTEGER NOT NULL,
    archive_name    TEXT NOT NULL,
    namespace       TEXT NOT NULL,
    note_id         TEXT NOT NULL,
    first_sequence  INTEGER NOT NULL,
    last_sequence   INTEGER NOT NULL,
    message_count   INTEGER NOT NULL,
    archived_at     TEXT NOT NULL,
    summarizer      TEXT NOT NULL,
    file_path       TEXT,
    file_error      TEXT,
    PRIMARY KEY (session_id, marker_sequence)
);
CREATE INDEX archives_unwritten ON archives(archived_at) WHERE file_path IS NULL;
