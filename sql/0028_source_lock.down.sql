-- Undo revision 28: revision 24's lock_source, guard_marking and unmark come back from
-- sql/0024_source_check.sql (migration 0028's downgrade); here the marks lock goes.
DROP FUNCTION pgdedup.write_marks(integer, boolean);
ALTER FUNCTION pgdedup.write_marks_unlocked(integer, boolean) RENAME TO write_marks;
DROP FUNCTION pgdedup.lock_marks(oid);
