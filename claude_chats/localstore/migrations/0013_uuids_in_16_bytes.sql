-- heavy when: SELECT coalesce(max(id), 0) > 20000 FROM messages
-- A message's uuid and a kept line's key are stored in 16 bytes when they start with a uuid as
-- Claude Code writes it (`localstore/uuids.py`): as 36 characters of TEXT each was in its row and again
-- in its unique index, 87 of 2,687 bytes a message at 100k (BENCHMARKS.md, session 25). Readers take
-- the text through `chats_uuid`, writers and look-ups bind `uuids.pack`.
--
-- In place, then each table's indexes written again in order (the unique ones shrink now; the rows'
-- pages keep the room they had until the file is next vacuumed: a purge's first scrub). By 50,000 ids
-- a statement (`db._run_script`): one UPDATE of every row kept each page it changed in memory for its own
-- rollback, 909 MB at a million messages. One transaction all the same: a kill leaves the journal as it
-- was. Heavy: the hook hands its turn over rather than wait (see 0012).

-- each 50000 ids of messages:
UPDATE messages SET uuid = chats_pack_uuid(uuid) WHERE id > ?1 AND id <= ?2 AND typeof(uuid) = 'text';
-- each 50000 ids of raw_lines:
UPDATE raw_lines SET key = chats_pack_uuid(key) WHERE id > ?1 AND id <= ?2 AND typeof(key) = 'text';
REINDEX messages;
REINDEX raw_lines;
