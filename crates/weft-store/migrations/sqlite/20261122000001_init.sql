-- weft store schema, version 1 (SQLite). JSON is stored as text.

CREATE TABLE sessions (
    session_id     TEXT    NOT NULL PRIMARY KEY,
    labels         TEXT    NOT NULL,
    created_at     INTEGER NOT NULL,
    ended_at       INTEGER,
    transcript_seq INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX sessions_newest ON sessions (created_at DESC, session_id DESC);

CREATE TABLE runs (
    run_id     TEXT    NOT NULL PRIMARY KEY,
    agent_id   TEXT    NOT NULL,
    session_id TEXT    NOT NULL REFERENCES sessions (session_id),
    status     TEXT    NOT NULL,
    labels     TEXT    NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    last_seq   INTEGER NOT NULL,
    snapshot   TEXT    NOT NULL
);
CREATE INDEX runs_newest ON runs (created_at DESC, run_id DESC);
CREATE INDEX runs_session ON runs (session_id, created_at DESC, run_id DESC);
CREATE INDEX runs_status ON runs (status, created_at DESC, run_id DESC);

CREATE TABLE run_events (
    run_id TEXT    NOT NULL REFERENCES runs (run_id),
    seq    INTEGER NOT NULL,
    body   TEXT    NOT NULL,
    PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;

CREATE TABLE transcript (
    session_id TEXT    NOT NULL REFERENCES sessions (session_id),
    seq        INTEGER NOT NULL,
    run_id     TEXT,
    at         INTEGER NOT NULL,
    message    TEXT    NOT NULL,
    PRIMARY KEY (session_id, seq)
) WITHOUT ROWID;

CREATE TABLE memory (
    session_id TEXT    NOT NULL REFERENCES sessions (session_id),
    key        TEXT    NOT NULL,
    value      TEXT    NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (session_id, key)
) WITHOUT ROWID;

-- scope_session is '' for an override that applies to every session;
-- scope_labels is the canonical JSON of the scope's labels.
CREATE TABLE prompt_overrides (
    name          TEXT    NOT NULL,
    scope_session TEXT    NOT NULL,
    scope_labels  TEXT    NOT NULL,
    template      TEXT    NOT NULL,
    updated_at    INTEGER NOT NULL,
    PRIMARY KEY (name, scope_session, scope_labels)
) WITHOUT ROWID;
