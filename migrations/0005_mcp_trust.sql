-- MCP trust.
--
-- `mcp_trust`: per workspace root (its canonical path), the user's decision
-- on the workspace's `.mcp.json`: accepted or declined, the SHA-256 of the
-- file's bytes it was made on (a decision lapses when the bytes change) and
-- when it was made (unix milliseconds).

CREATE TABLE mcp_trust (
    workspace   TEXT    PRIMARY KEY,
    sha256      TEXT    NOT NULL,
    decision    TEXT    NOT NULL CHECK (decision IN ('accepted', 'declined')),
    decided_at  INTEGER NOT NULL
);
