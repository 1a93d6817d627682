-- weft store schema, version 1 (PostgreSQL). JSON is stored as text.

CREATE TABLE sessions (
    session_id     TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    labels         TEXT COLLATE "C" NOT NULL,
    created_at     BIGINT  NOT NULL,
    ended_at       BIGINT ,
    transcript_seq BIGINT  NOT NULL DEFAULT 0
);
CREATE INDEX sessions_newest ON sessions (created_at DESC, session_id DESC);

CREATE TABLE runs (
    run_id     TEXT COLLATE "C" NOT NULL PRIMARY KEY,
    agent_id   TEXT COLLATE "C" NOT NULL,
    session_id TEXT COLLATE "C" NOT NULL REFERENCES sessions (session_id),
    status     TEXT COLLATE "C" NOT NULL,
    labels     TEXT COLLATE "C" NOT NULL,
    created_at BIGINT  NOT NULL,
    updated_at BIGINT  NOT NULL,
    last_seq   BIGINT  NOT NULL,
    snapshot   TEXT COLLATE "C" NOT NULL
);
CREATE INDEX runs_newest ON runs (created_at DESC, run_id DESC);
CREATE INDEX runs_session ON runs (session_id, created_at DESC, run_id DESC);
CREATE INDEX runs_status ON runs (status, created_at DESC, run_id DESC);

CREATE TABLE run_events (
    run_id TEXT COLLATE "C" NOT NULL REFERENCES runs (run_id),
    seq    BIGINT  NOT NULL,
    body   TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (run_id, seq)
);

CREATE TABLE transcript (
    session_id TEXT COLLATE "C" NOT NULL REFERENCES sessions (session_id),
    seq        BIGINT  NOT NULL,
    run_id     TEXT COLLATE "C",
    at         BIGINT  NOT NULL,
    message    TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (session_id, seq)
);

CREATE TABLE memory (
    session_id TEXT COLLATE "C" NOT NULL REFERENCES sessions (session_id),
    key        TEXT COLLATE "C" NOT NULL,
    value      TEXT COLLATE "C" NOT NULL,
    updated_at BIGINT  NOT NULL,
    PRIMARY KEY (session_id, key)
);

-- scope_session is '' for an override that applies to every session;
-- scope_labels is the canonical JSON of the scope's labels.
CREATE TABLE prompt_overrides (
    name          TEXT COLLATE "C" NOT NULL,
    scope_session TEXT COLLATE "C" NOT NULL,
    scope_labels  TEXT COLLATE "C" NOT NULL,
    template      TEXT COLLATE "C" NOT NULL,
    updated_at    BIGINT  NOT NULL,
    PRIMARY KEY (name, scope_session, scope_labels)
);
