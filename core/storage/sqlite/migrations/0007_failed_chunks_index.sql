-- The app's header polls the count of chunks whose embedding failed every second; a
-- partial index keeps that count proportional to the failures, not to the file.
CREATE INDEX chunks_failed ON chunks(fts_rowid) WHERE embedding_status = 'failed';
