-- Sessions, entries and system prompts, with a full-text index of each entry's words.
-- Runs with search_path set to the configured schema, inside the migration transaction.
CREATE TABLE sessions (
    id text PRIMARY KEY,
    workspace text NOT NULL,
    created double precision NOT NULL,
    title text,
    forked_from text,
    fork_entry text,
    meta text NOT NULL DEFAULT '{}',
    updated double precision NOT NULL,
    entry_count integer NOT NULL DEFAULT 0,
    last_entry text,
    handoff_seq integer NOT NULL DEFAULT 0,
    usage_count integer NOT NULL DEFAULT 0,
    input_tokens bigint NOT NULL DEFAULT 0,
    output_tokens bigint NOT NULL DEFAULT 0,
    cache_read_tokens bigint NOT NULL DEFAULT 0,
    cache_write_tokens bigint NOT NULL DEFAULT 0,
    reasoning_tokens bigint NOT NULL DEFAULT 0,
    cost double precision
);
CREATE INDEX sessions_by_updated ON sessions (updated DESC, id DESC);
CREATE INDEX sessions_by_workspace ON sessions (workspace, updated DESC, id DESC);

CREATE TABLE system_prompts (
    sha256 text PRIMARY KEY,
    text text NOT NULL
);

CREATE TABLE entries (
    rid bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    session_id text NOT NULL REFERENCES sessions (id),
    seq integer NOT NULL,
    id text NOT NULL,
    parent_id text,
    type text NOT NULL,
    time double precision NOT NULL,
    payload text NOT NULL,
    system_prompt text REFERENCES system_prompts (sha256),
    -- the entry's words (lower case, at most 200 characters each), as lexemes: see rows.search_words
    search tsvector NOT NULL DEFAULT ''::tsvector,
    -- false when the entry had more distinct words than the index keeps: search always checks it
    search_complete boolean NOT NULL DEFAULT true,
    UNIQUE (session_id, seq)
);
CREATE INDEX entries_by_id ON entries (session_id, id);
CREATE INDEX entries_by_time ON entries (time DESC, rid DESC);
CREATE INDEX entries_search ON entries USING gin (search);
CREATE INDEX entries_unindexed ON entries (rid) WHERE NOT search_complete;
