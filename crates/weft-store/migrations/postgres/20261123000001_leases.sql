-- Leases: who may drive a run (owner), the fencing epoch every commit of a
-- driver carries, and when the lease lapses unless renewed (milliseconds).
-- No owner means free: a running run without one is queued for any process.
ALTER TABLE runs ADD COLUMN lease_owner TEXT;
ALTER TABLE runs ADD COLUMN lease_epoch BIGINT NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN lease_expires BIGINT NOT NULL DEFAULT 0;
CREATE INDEX runs_orphans ON runs (lease_expires) WHERE status = 'running';
