-- Compaction support.
--
-- 1. A compaction archives messages and puts a summary, or a rewritten copy,
--    in the same place (seq) as the originals it replaces, so a position must
--    be unique among the *active* messages only. SQLite cannot drop a table
--    constraint, so the messages table is rebuilt without UNIQUE (session_id,
--    seq) and with a partial unique index instead. Rows keep their `num`,
--    which the external-content search index is keyed by.
-- 2. `created_by` marks the rows a compaction inserted (its summary and
--    rewritten copies), so undoing it removes exactly those.
-- 3. `compression_state` keeps each session's automatic-compression state
--    (strikes, lockout and its reason, cooldown, last provider reading)
--    across processes.

DROP TRIGGER messages_count_insert;
DROP TRIGGER messages_count_delete;
DROP TRIGGER messages_count_update;
DROP TRIGGER messages_fts_insert;
DROP TRIGGER messages_fts_delete;
DROP TRIGGER messages_fts_update;

-- Dropping the old table sets usage.message_id to NULL (ON DELETE SET NULL);
-- keep the links to restore them.
CREATE TABLE usage_links AS SELECT num, message_id FROM usage WHERE message_id IS NOT NULL;

CREATE TABLE messages_rebuilt (
    num           INTEGER PRIMARY KEY,
    id            TEXT    NOT NULL UNIQUE,
    session_id    TEXT    NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    seq           INTEGER NOT NULL CHECK (seq >= 1),
    role          TEXT    NOT NULL CHECK (role IN ('system', 'user', 'assistant', 'tool')),
    content       TEXT    NOT NULL,
    tool_calls    TEXT,
    tool_call_id  TEXT,
    pinned        INTEGER NOT NULL DEFAULT 0 CHECK (pinned IN (0, 1)),
    ephemeral_ttl INTEGER,
    kind          TEXT    NOT NULL CHECK (kind IN ('normal', 'summary', 'synthetic')),
    archived_by   TEXT    REFERENCES compactions (id) DEFERRABLE INITIALLY DEFERRED,
    status        TEXT    NOT NULL CHECK (status IN ('complete', 'streaming', 'interrupted', 'error')),
    created_at    INTEGER NOT NULL,
    tokens        INTEGER,
    tokenizer     TEXT,
    writer_pid    INTEGER,
    created_by    TEXT    REFERENCES compactions (id) DEFERRABLE INITIALLY DEFERRED
) STRICT;

INSERT INTO messages_rebuilt (num, id, session_id, seq, role, content, tool_calls, tool_call_id, pinned,
                              ephemeral_ttl, kind, archived_by, status, created_at, tokens, tokenizer,
                              writer_pid)
SELECT num, id, session_id, seq, role, content, tool_calls, tool_call_id, pinned,
       ephemeral_ttl, kind, archived_by, status, created_at, tokens, tokenizer, writer_pid
  FROM messages;

DROP TABLE messages;
ALTER TABLE messages_rebuilt RENAME TO messages;

UPDATE usage SET message_id = (SELECT l.message_id FROM usage_links l WHERE l.num = usage.num)
 WHERE num IN (SELECT num FROM usage_links);
DROP TABLE usage_links;

CREATE UNIQUE INDEX messages_active_seq ON messages (session_id, seq) WHERE archived_by IS NULL;
CREATE INDEX messages_by_session_seq ON messages (session_id, seq);
CREATE INDEX messages_by_archived_by ON messages (archived_by) WHERE archived_by IS NOT NULL;
CREATE INDEX messages_by_created_by ON messages (created_by) WHERE created_by IS NOT NULL;

CREATE TRIGGER messages_count_insert AFTER INSERT ON messages
WHEN new.archived_by IS NULL
BEGIN
    UPDATE sessions
    SET message_count = message_count + 1,
        token_count = token_count + coalesce(new.tokens, 0)
    WHERE id = new.session_id;
END;

CREATE TRIGGER messages_count_delete AFTER DELETE ON messages
WHEN old.archived_by IS NULL
BEGIN
    UPDATE sessions
    SET message_count = message_count - 1,
        token_count = token_count - coalesce(old.tokens, 0)
    WHERE id = old.session_id;
END;

CREATE TRIGGER messages_count_update AFTER UPDATE OF archived_by, tokens ON messages
BEGIN
    UPDATE sessions
    SET message_count = message_count
            - (old.archived_by IS NULL) + (new.archived_by IS NULL),
        token_count = token_count
            - (CASE WHEN old.archived_by IS NULL THEN coalesce(old.tokens, 0) ELSE 0 END)
            + (CASE WHEN new.archived_by IS NULL THEN coalesce(new.tokens, 0) ELSE 0 END)
    WHERE id = new.session_id;
END;

CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN
    INSERT INTO messages_fts (rowid, content) VALUES (new.num, new.content);
END;

CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN
    INSERT INTO messages_fts (messages_fts, rowid, content) VALUES ('delete', old.num, old.content);
END;

CREATE TRIGGER messages_fts_update AFTER UPDATE OF content ON messages BEGIN
    INSERT INTO messages_fts (messages_fts, rowid, content) VALUES ('delete', old.num, old.content);
    INSERT INTO messages_fts (rowid, content) VALUES (new.num, new.content);
END;

CREATE TABLE compression_state (
    session_id TEXT    PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
    state      TEXT    NOT NULL, -- JSON, owned by the compression engine
    updated_at INTEGER NOT NULL
) STRICT;
