-- strata schema, version 1.
--
-- Timestamps are unix milliseconds. Ids are UUIDs stored as TEXT. Every table
-- has an INTEGER PRIMARY KEY (`num`) so that rowids stay stable across VACUUM,
-- which the external-content FTS5 tables rely on. Once released, this file is
-- never edited: later changes go in 0002_*.sql and up.

CREATE TABLE sessions (
    num               INTEGER PRIMARY KEY,
    id                TEXT    NOT NULL UNIQUE,
    title             TEXT    NOT NULL,
    workspace         TEXT    NOT NULL,
    model             TEXT    NOT NULL,
    provider          TEXT    NOT NULL,
    current_prompt_id TEXT    REFERENCES system_prompts (id) DEFERRABLE INITIALLY DEFERRED,
    parent_id         TEXT    REFERENCES sessions (id) ON DELETE SET NULL DEFERRABLE INITIALLY DEFERRED,
    -- Counters over the active (not archived) messages, kept by triggers.
    message_count     INTEGER NOT NULL DEFAULT 0,
    token_count       INTEGER NOT NULL DEFAULT 0,
    created_at        INTEGER NOT NULL,
    updated_at        INTEGER NOT NULL
) STRICT;

CREATE INDEX sessions_by_updated_at ON sessions (updated_at DESC, id DESC);
CREATE INDEX sessions_by_workspace ON sessions (workspace, updated_at DESC, id DESC);

CREATE TABLE system_prompts (
    num             INTEGER PRIMARY KEY,
    id              TEXT    NOT NULL UNIQUE,
    session_id      TEXT    NOT NULL REFERENCES sessions (id) ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED,
    version         INTEGER NOT NULL CHECK (version >= 1),
    text            TEXT    NOT NULL,
    layers          TEXT    NOT NULL, -- JSON array of LayerInfo
    boundary_offset INTEGER,
    sha256          TEXT    NOT NULL,
    fingerprint     TEXT    NOT NULL, -- JSON Fingerprint
    created_at      INTEGER NOT NULL,
    UNIQUE (session_id, version)
) STRICT;

CREATE TABLE compactions (
    num                INTEGER PRIMARY KEY,
    id                 TEXT    NOT NULL UNIQUE,
    session_id         TEXT    NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    trigger            TEXT    NOT NULL CHECK (trigger IN ('auto', 'manual', 'overflow')),
    topic              TEXT,
    first_message_id   TEXT,
    last_message_id    TEXT,
    summary_message_id TEXT,
    summarizer         TEXT    NOT NULL,
    tokens_before      INTEGER NOT NULL,
    tokens_after       INTEGER NOT NULL,
    messages_before    INTEGER NOT NULL,
    messages_after     INTEGER NOT NULL,
    prompt_before_id   TEXT,
    prompt_after_id    TEXT,
    undone_at          INTEGER,
    created_at         INTEGER NOT NULL
) STRICT;

CREATE INDEX compactions_by_session ON compactions (session_id, created_at);

CREATE TABLE messages (
    num           INTEGER PRIMARY KEY,
    id            TEXT    NOT NULL UNIQUE,
    session_id    TEXT    NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    seq           INTEGER NOT NULL CHECK (seq >= 1),
    role          TEXT    NOT NULL CHECK (role IN ('system', 'user', 'assistant', 'tool')),
    content       TEXT    NOT NULL,
    tool_calls    TEXT,   -- JSON array of ToolCall; NULL when there are none
    tool_call_id  TEXT,
    pinned        INTEGER NOT NULL DEFAULT 0 CHECK (pinned IN (0, 1)),
    ephemeral_ttl INTEGER,
    kind          TEXT    NOT NULL CHECK (kind IN ('normal', 'summary', 'synthetic')),
    archived_by   TEXT    REFERENCES compactions (id) DEFERRABLE INITIALLY DEFERRED,
    status        TEXT    NOT NULL CHECK (status IN ('complete', 'streaming', 'interrupted', 'error')),
    created_at    INTEGER NOT NULL,
    tokens        INTEGER, -- cached count, NULL until counted
    tokenizer     TEXT,    -- the tokenizer that produced `tokens`
    UNIQUE (session_id, seq)
) STRICT;

CREATE INDEX messages_by_archived_by ON messages (archived_by) WHERE archived_by IS NOT NULL;

CREATE TABLE usage (
    num                     INTEGER PRIMARY KEY,
    session_id              TEXT    NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    message_id              TEXT    REFERENCES messages (id) ON DELETE SET NULL DEFERRABLE INITIALLY DEFERRED,
    model                   TEXT    NOT NULL,
    prompt_tokens           INTEGER,
    completion_tokens       INTEGER,
    cache_read_tokens       INTEGER,
    cache_write_tokens      INTEGER,
    reasoning_tokens        INTEGER,
    estimated_prompt_tokens INTEGER NOT NULL,
    ttft_ms                 INTEGER,
    duration_ms             INTEGER,
    created_at              INTEGER NOT NULL
) STRICT;

CREATE INDEX usage_by_session ON usage (session_id, created_at);

-- Session counters: active messages and the sum of their cached token counts.

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

-- Full-text search over message text and session titles (external content).

CREATE VIRTUAL TABLE messages_fts USING fts5 (
    content,
    content = 'messages',
    content_rowid = 'num',
    tokenize = 'unicode61 remove_diacritics 2',
    columnsize = 0
);

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

CREATE VIRTUAL TABLE sessions_fts USING fts5 (
    title,
    content = 'sessions',
    content_rowid = 'num',
    tokenize = 'unicode61 remove_diacritics 2',
    columnsize = 0
);

CREATE TRIGGER sessions_fts_insert AFTER INSERT ON sessions BEGIN
    INSERT INTO sessions_fts (rowid, title) VALUES (new.num, new.title);
END;

CREATE TRIGGER sessions_fts_delete AFTER DELETE ON sessions BEGIN
    INSERT INTO sessions_fts (sessions_fts, rowid, title) VALUES ('delete', old.num, old.title);
END;

CREATE TRIGGER sessions_fts_update AFTER UPDATE OF title ON sessions BEGIN
    INSERT INTO sessions_fts (sessions_fts, rowid, title) VALUES ('delete', old.num, old.title);
    INSERT INTO sessions_fts (rowid, title) VALUES (new.num, new.title);
END;
