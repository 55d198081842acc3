-- Undo revision 29: revision 21's track takes its name back; revision 28's write_marks comes back
-- from sql/0028_source_lock.sql (migration 0029's downgrade).
DROP FUNCTION pgdedup.track(text, boolean);
ALTER FUNCTION pgdedup.track_triggers(text, boolean) RENAME TO track;
