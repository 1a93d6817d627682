-- Lists are filtered by the caller's tenant label: index that label's value
-- (the expression the list queries use, the key written in), newest first.
CREATE INDEX runs_tenant ON runs ((labels::jsonb ->> 'weft.tenant'), created_at DESC, run_id DESC);
CREATE INDEX sessions_tenant ON sessions ((labels::jsonb ->> 'weft.tenant'), created_at DESC, session_id DESC);
