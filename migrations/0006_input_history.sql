-- Composer input history.
--
-- `input_history`: what the user entered in the app's composer (messages
-- and commands), per workspace root (its path as text, as `sessions`
-- names it), in the order entered (`id`); `entered_at` in unix
-- milliseconds. The store keeps the newest rows of each workspace up to
-- the cap its caller gives.

CREATE TABLE input_history (
    id          INTEGER PRIMARY KEY,
    workspace   TEXT    NOT NULL,
    text        TEXT    NOT NULL,
    entered_at  INTEGER NOT NULL
);

CREATE INDEX input_history_by_workspace ON input_history (workspace, id);
