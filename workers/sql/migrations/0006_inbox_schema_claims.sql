-- What each wait says its answers mean, and who is answering it.

-- response_schema: the JSON schema interrupt(..., response_schema=...) gave (its
-- decisions or choices), kept with the row so the inbox can offer exactly those.
-- claimed_by / claimed_until: an approver's claim on the wait (see graphrun ui); it
-- lapses at claimed_until and goes with the row when the wait is answered.
ALTER TABLE graphruntime_interrupts
    ADD COLUMN response_schema jsonb,
    ADD COLUMN claimed_by      text,
    ADD COLUMN claimed_until   timestamptz;
