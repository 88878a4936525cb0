-- Tools.
--
-- 1. `messages.tool_meta`: for a `tool` message stored by the tool loop, its
--    status (ok, error, denied, interrupted, not_run) and what the output
--    limits did (truncated, previewed, spill path), as JSON.
-- 2. `usage.tools_sha256`: the hash of the tools array each request carried.
-- 3. `file_changes`: the previous content of every file `write_file` and
--    `edit_file` changed, so a change can be undone (`/undo-edit`).
-- 4. `session_tools`: per session, the tools switched off (`/tools off`) and
--    why a server refused tools, so both hold when the session is resumed.

ALTER TABLE messages ADD COLUMN tool_meta TEXT;
ALTER TABLE usage ADD COLUMN tools_sha256 TEXT;

CREATE TABLE file_changes (
    num           INTEGER PRIMARY KEY,
    session_id    TEXT    NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    tool_call_id  TEXT    NOT NULL,
    path          TEXT    NOT NULL,
    before        BLOB,
    after_sha256  TEXT    NOT NULL,
    created_at    INTEGER NOT NULL,
    undone_at     INTEGER
);
CREATE INDEX file_changes_session ON file_changes (session_id, num);

CREATE TABLE session_tools (
    session_id  TEXT PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
    disabled    TEXT NOT NULL DEFAULT '[]',
    refused     TEXT
);
