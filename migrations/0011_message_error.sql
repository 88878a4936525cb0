-- What a failed reply failed with, one sentence, shown with it in the
-- transcript (the reply itself may be empty); never sent to the model.

ALTER TABLE messages ADD COLUMN error TEXT;
