-- Purge tombstones (see claude_chats/purge.py): every machine's sync applies
-- them to its journal so no journal pushes a purged conversation back.
-- IF NOT EXISTS: purge.ensure_tombstones created this table on demand before
-- it was a migration, so databases purged earlier already have it.
CREATE TABLE IF NOT EXISTS purges (
    id         bigserial PRIMARY KEY,
    kind       text NOT NULL CHECK (kind IN ('session', 'project')),
    target     text NOT NULL,
    created_at timestamptz NOT NULL,
    machine    text
);
