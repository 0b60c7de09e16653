-- The canonical store: conversations, messages with full text search, and
-- embedding spaces. A superset of the hand-made seed schema (its names keep
-- working). Never edit a released migration; add the next numbered file.
--
-- Vectors live in one table per embedding space, vectors_<spaces.id>, created
-- by claude_chats.sync.store when a space is first pushed (its dimension is
-- only known then), like the journal's sqlite-vec tables vec_<id>.

CREATE EXTENSION IF NOT EXISTS vector;

CREATE TABLE conversations (
    id                uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    session_id        text NOT NULL UNIQUE,   -- Claude Code session id; subagents "<parent>:agent-<id>"
    project_path      text,
    git_branch        text,
    name              text,                   -- coalesce(custom title, agent name, summary, slug)
    started_at        timestamptz,
    last_at           timestamptz,
    parent_session_id text,
    agent_id          text,
    machine           text,                   -- the machine whose journal first pushed it
    updated_at        timestamptz             -- the journal's updated_at of the pushed version
);
CREATE INDEX conversations_project ON conversations (project_path);
CREATE INDEX conversations_parent ON conversations (parent_session_id);
CREATE INDEX conversations_last ON conversations (last_at);

CREATE TABLE messages (
    id              uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    conversation_id uuid NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    message_uuid    text NOT NULL UNIQUE,     -- the journal's uuid ("#n" suffix for the n-th block of a line)
    role            text NOT NULL,
    kind            text NOT NULL,
    content         text NOT NULL,
    content_tsv     tsvector GENERATED ALWAYS AS (to_tsvector('english', content)) STORED,
    created_at      timestamptz,
    sequence_num    integer NOT NULL,
    -- its index is the (conversation_id, sequence_num) index readers page with
    CONSTRAINT messages_conversation_seq UNIQUE (conversation_id, sequence_num)
);
CREATE INDEX messages_content_tsv ON messages USING gin (content_tsv);
CREATE INDEX messages_created ON messages (created_at);

-- One row per embedding space: provider + model + dimensions + options. The
-- canary is the space's embedding of a fixed sentence: a reader re-embeds it
-- with its configured model and refuses semantic search when they differ.
CREATE TABLE spaces (
    id          serial PRIMARY KEY,
    key         text NOT NULL UNIQUE,         -- canonical "provider/model/dimensions/options"
    provider    text NOT NULL,
    model       text NOT NULL,
    dimensions  integer NOT NULL CHECK (dimensions > 0),
    options     jsonb NOT NULL DEFAULT '{}',
    canary      vector,
    index_kind  text NOT NULL DEFAULT 'hnsw' CHECK (index_kind IN ('hnsw', 'ivfflat')),
    index_lists integer,                      -- ivfflat: lists of the current index
    created_at  timestamptz NOT NULL DEFAULT now()
);
