-- Context control.
--
-- 1. `messages.excluded`: the user left the message (or its tool call unit)
--    out of every request until it is included again; nothing is deleted.
-- 2. `compactions.kind`: what archived the messages. `summary` is a
--    compression (a summary takes their place); `edit` is an edit and resend
--    (the edited user message and everything after it are archived, the new
--    text is appended); `edit_undo` undoes an edit (the messages appended
--    after the edit are archived, the edit's originals are active again).
-- 3. `compactions.edited`: the user edited the summary before it was stored.
-- 4. `messages.interruption`: why a reply stopped before it was done —
--    `cancelled` (the user), `cut_off` (the server closed the stream) or
--    `failed` (the request failed mid-reply) — so the two read differently.

ALTER TABLE messages ADD COLUMN excluded INTEGER NOT NULL DEFAULT 0 CHECK (excluded IN (0, 1));
ALTER TABLE compactions ADD COLUMN kind TEXT NOT NULL DEFAULT 'summary'
    CHECK (kind IN ('summary', 'edit', 'edit_undo'));
ALTER TABLE messages ADD COLUMN interruption TEXT CHECK (interruption IN ('cancelled', 'cut_off', 'failed'));
ALTER TABLE compactions ADD COLUMN edited INTEGER NOT NULL DEFAULT 0 CHECK (edited IN (0, 1));
