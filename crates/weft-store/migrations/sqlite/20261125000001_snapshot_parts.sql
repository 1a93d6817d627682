-- A run's snapshot in parts: `runs.snapshot` holds the machine's head (every
-- field but its transcript and tool outputs, with their counts: a `parts`
-- field), and this table holds the transcript's messages and the tool
-- outputs, one row each, numbered from 0. Rows are only ever added: a
-- commit inserts the items the store does not hold yet (ignoring those it
-- does), so what a commit writes does not grow with the run's length.
-- A snapshot stored before this migration (no `parts` field) is a whole
-- machine and has no rows here until its run commits again.
CREATE TABLE run_snapshot_parts (
    run_id TEXT    NOT NULL REFERENCES runs (run_id),
    kind   TEXT    NOT NULL CHECK (kind IN ('message', 'output')),
    idx    INTEGER NOT NULL,
    body   TEXT    NOT NULL,
    PRIMARY KEY (run_id, kind, idx)
) WITHOUT ROWID;
