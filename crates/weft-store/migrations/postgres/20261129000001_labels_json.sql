-- Labels as JSON without failing on a value that is not JSON at all: a
-- stored `labels` text that does not parse reads as NULL (so its label
-- matches no filter and the list skips the row as corrupt) instead of
-- failing the whole statement, as `labels::jsonb` does. IMMUTABLE, so the
-- tenant indexes can be built on it; the lists use the same expression.
CREATE FUNCTION weft_labels(labels TEXT) RETURNS JSONB
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE STRICT AS $$
BEGIN
    RETURN labels::jsonb;
EXCEPTION WHEN others THEN
    RETURN NULL;
END
$$;

DROP INDEX runs_tenant;
DROP INDEX sessions_tenant;
CREATE INDEX runs_tenant ON runs ((weft_labels(labels) ->> 'weft.tenant'), created_at DESC, run_id DESC);
CREATE INDEX sessions_tenant ON sessions ((weft_labels(labels) ->> 'weft.tenant'), created_at DESC, session_id DESC);
