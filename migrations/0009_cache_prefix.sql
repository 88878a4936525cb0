-- Prompt-cache bookkeeping. Each usage row keeps what strata predicted of
-- the request's cache reads and where the cached prefix broke (`cache`, a
-- JSON `CacheCheck`); `cache_prefixes` keeps the block hashes of each
-- session's last answered request (a JSON `PrefixSnapshot`), so a request
-- sent by the next process is compared with it.

ALTER TABLE usage ADD COLUMN cache TEXT;

CREATE TABLE cache_prefixes (
    session_id TEXT    PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
    snapshot   TEXT    NOT NULL,
    updated_at INTEGER NOT NULL
) STRICT;
