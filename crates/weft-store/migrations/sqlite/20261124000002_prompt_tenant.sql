-- Prompt overrides may be scoped to a tenant ('' stands for every tenant);
-- the tenant is part of an override's key, next to its session and labels.
CREATE TABLE prompt_overrides_new (
    name          TEXT    NOT NULL,
    scope_tenant  TEXT    NOT NULL,
    scope_session TEXT    NOT NULL,
    scope_labels  TEXT    NOT NULL,
    template      TEXT    NOT NULL,
    updated_at    INTEGER NOT NULL,
    PRIMARY KEY (name, scope_tenant, scope_session, scope_labels)
) WITHOUT ROWID;
INSERT INTO prompt_overrides_new (name, scope_tenant, scope_session, scope_labels, template, updated_at)
    SELECT name, '', scope_session, scope_labels, template, updated_at FROM prompt_overrides;
DROP TABLE prompt_overrides;
ALTER TABLE prompt_overrides_new RENAME TO prompt_overrides;
