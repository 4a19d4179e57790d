-- Runners and the reasons a schedule stopped (seed 001's schedules table, extended).
--
-- A runner claims a due schedule before it runs it: claimed_by names the runner and
-- claim_expires_at ends the claim, so a runner that died mid-run releases its schedules when
-- the claim runs out and two runners never run the same due schedule. status_reason says in
-- words why a schedule is paused or completed (e.g. "paused after 5 consecutive failures").

ALTER TABLE schedules ADD COLUMN claimed_by TEXT;
ALTER TABLE schedules ADD COLUMN claim_expires_at TEXT;
ALTER TABLE schedules ADD COLUMN status_reason TEXT;
