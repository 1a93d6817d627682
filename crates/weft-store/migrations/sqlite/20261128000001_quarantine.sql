-- Why a run was quarantined: failed without its stored state being read,
-- because that state cannot be read (`corrupt_state`). NULL for every
-- other run.
ALTER TABLE runs ADD COLUMN quarantined TEXT;
