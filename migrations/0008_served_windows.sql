-- The context window a local OpenAI-compatible server serves, per base URL
-- and model, as the server said it (`source = 'server'`) or as an overflow
-- error stated it (`source = 'overflow_error'`), so it is asked once.

CREATE TABLE served_windows (
    base_url   TEXT    NOT NULL,
    model      TEXT    NOT NULL,
    tokens     INTEGER NOT NULL CHECK (tokens > 0),
    source     TEXT    NOT NULL CHECK (source IN ('server', 'overflow_error')),
    detail     TEXT    NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (base_url, model)
) STRICT;
