-- The names a session gave its MCP tools (`server__tool`, made to fit the
-- providers' rule for tool names, suffixed `_2`, `_3`… on a collision), one
-- row per (server, tool): a resumed session and a changed tool list give
-- each tool the name its history already calls it by.

CREATE TABLE mcp_tool_names (
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    server     TEXT NOT NULL,
    tool       TEXT NOT NULL,
    name       TEXT NOT NULL,
    PRIMARY KEY (session_id, server, tool),
    UNIQUE (session_id, name)
) STRICT;
