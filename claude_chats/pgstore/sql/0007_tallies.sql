-- Counts a search reads instead of counting (issue 22). The note a search adds when many messages
-- have no vectors yet ("N of M messages have vectors") counted every vector and every message of
-- the store first: 1-2 s at a million messages, paid by every `chats search` process. Statement
-- triggers append what each statement changed, one row per statement and group, never updated,
-- so concurrent pushes and purges take no lock on them; a reader sums them; `chats sync` folds
-- them into one row per group after a run (PgStore.fold_tallies: a DELETE ... RETURNING and its
-- sums in one statement, which concurrent writers do not disturb).
CREATE TABLE message_tally (
    kind    text NOT NULL,
    is_copy boolean NOT NULL,
    delta   bigint NOT NULL
);
-- Messages with vectors of a space: its rows of chunk 0 (every embedded message has a chunk 0:
-- models.chunking numbers a message's pieces from 0, and they are pushed together). A space has a
-- row here from when its table is tallied on (chats_tally_space); a space with none (created by
-- an earlier version after this migration) is counted the slow way.
CREATE TABLE vector_tally (
    space_id integer NOT NULL,
    delta    bigint NOT NULL
);
CREATE INDEX vector_tally_space ON vector_tally (space_id);

-- SECURITY DEFINER: a run-time role granted its rights on the tables before this migration (GRANT ...
-- ON ALL TABLES) still pushes and purges; the triggers write the tallies as their owner.
CREATE FUNCTION chats_tally_messages() RETURNS trigger LANGUAGE plpgsql
    SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO message_tally SELECT kind, is_copy, count(*) FROM added GROUP BY kind, is_copy;
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO message_tally SELECT kind, is_copy, -count(*) FROM removed GROUP BY kind, is_copy;
    ELSE
        INSERT INTO message_tally SELECT kind, is_copy, sum(d) FROM (
            SELECT kind, is_copy, 1 AS d FROM added UNION ALL SELECT kind, is_copy, -1 FROM removed) t
        GROUP BY kind, is_copy HAVING sum(d) <> 0;
    END IF;
    RETURN NULL;
END $$;

CREATE FUNCTION chats_tally_vectors() RETURNS trigger LANGUAGE plpgsql
    SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO vector_tally SELECT TG_ARGV[0]::integer, count(*) FROM added WHERE chunk_index = 0
        HAVING count(*) > 0;
    ELSE
        INSERT INTO vector_tally SELECT TG_ARGV[0]::integer, -count(*) FROM removed WHERE chunk_index = 0
        HAVING count(*) > 0;
    END IF;
    RETURN NULL;
END $$;

-- The triggers of a space's vector table, and its count so far (the table is locked against
-- writers by the first CREATE TRIGGER until the transaction commits, so none is missed).
CREATE FUNCTION chats_tally_space(space integer) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    t text := 'vectors_' || space;
BEGIN
    EXECUTE format('CREATE TRIGGER %I AFTER INSERT ON %I REFERENCING NEW TABLE AS added '
                   'FOR EACH STATEMENT EXECUTE FUNCTION chats_tally_vectors(%s)', t || '_tally_in', t, space);
    EXECUTE format('CREATE TRIGGER %I AFTER DELETE ON %I REFERENCING OLD TABLE AS removed '
                   'FOR EACH STATEMENT EXECUTE FUNCTION chats_tally_vectors(%s)', t || '_tally_out', t, space);
    EXECUTE format('INSERT INTO vector_tally SELECT %s, count(*) FROM %I WHERE chunk_index = 0', space, t);
END $$;

CREATE TRIGGER messages_tally_in AFTER INSERT ON messages REFERENCING NEW TABLE AS added
    FOR EACH STATEMENT EXECUTE FUNCTION chats_tally_messages();
CREATE TRIGGER messages_tally_out AFTER DELETE ON messages REFERENCING OLD TABLE AS removed
    FOR EACH STATEMENT EXECUTE FUNCTION chats_tally_messages();
CREATE TRIGGER messages_tally_change AFTER UPDATE ON messages REFERENCING OLD TABLE AS removed NEW TABLE AS added
    FOR EACH STATEMENT EXECUTE FUNCTION chats_tally_messages();
INSERT INTO message_tally SELECT kind, is_copy, count(*) FROM messages GROUP BY kind, is_copy;
SELECT chats_tally_space(id) FROM spaces WHERE to_regclass('vectors_' || id) IS NOT NULL;
