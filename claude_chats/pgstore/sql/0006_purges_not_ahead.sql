-- A tombstone dated more than 10 minutes ahead of the server's clock (or at 'infinity') is refused
-- at INSERT: a row dated ahead would cover what every machine records until that date. Every
-- machine's sync refuses such a row anyway (claude_chats/purge.py, CLOCK_SKEW); this says so to
-- whoever writes it, whichever role. `chats purge` dates its own rows least(its clock, now()).
-- NOT VALID: rows already there are not checked, so a database holding one still migrates (the
-- syncs keep such a row quarantined). A CHECK may name now(): it only grows, so a row that passed
-- passes again (a dump restored later included).
ALTER TABLE purges ADD CONSTRAINT purges_not_ahead
    CHECK (created_at <= now() + interval '10 minutes') NOT VALID;
