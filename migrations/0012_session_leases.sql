-- One writer per session: the lease a strata process holds on a session
-- while it has the session open for writing. `holder` is the holding
-- session service's own token (a process may hold several); `pid` and
-- `host` say who holds it and let a lease of a dead process be taken.

CREATE TABLE session_leases (
    session_id  TEXT PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
    holder      TEXT NOT NULL,
    pid         INTEGER NOT NULL,
    host        TEXT NOT NULL,
    acquired_at INTEGER NOT NULL,
    renewed_at  INTEGER NOT NULL
) STRICT;
