-- A pause or cancel asked of a running run by a process that does not drive
-- it (JSON, see weft_core::lease::ControlRequest); the lease holder polls
-- for the requests on its runs. A commit that stops the run clears it.
ALTER TABLE runs ADD COLUMN control_request TEXT;
CREATE INDEX runs_controls ON runs (lease_owner) WHERE control_request IS NOT NULL;
