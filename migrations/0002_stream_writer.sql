-- The process writing a streaming reply, so that a reply left `streaming`
-- by a process that died can be told apart from one still arriving in
-- another process, and marked `interrupted` at the next start.
ALTER TABLE messages ADD COLUMN writer_pid INTEGER;
