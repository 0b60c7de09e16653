-- The index of the messages by their transcript file (`messages_file`) goes: 12.5 bytes a message at
-- a million messages (BENCHMARKS.md, session 25) for one statement, the summaries waiting for their leaf
-- (`writer._resolve_summaries`), which finds the leaf by its uuid's index now. A purge reaches a file's
-- row from the messages it deletes (by their session), and no transcript row is ever deleted (which
-- would have looked its messages up by file to set their `file_id` to NULL).
DROP INDEX IF EXISTS messages_file;
