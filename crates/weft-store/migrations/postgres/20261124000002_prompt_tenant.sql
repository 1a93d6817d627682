-- Prompt overrides may be scoped to a tenant ('' stands for every tenant);
-- the tenant is part of an override's key, next to its session and labels.
ALTER TABLE prompt_overrides ADD COLUMN scope_tenant TEXT COLLATE "C" NOT NULL DEFAULT '';
ALTER TABLE prompt_overrides DROP CONSTRAINT prompt_overrides_pkey;
ALTER TABLE prompt_overrides ADD PRIMARY KEY (name, scope_tenant, scope_session, scope_labels);
