-- Undo revision 34 (migration 0034's downgrade has put back the functions it replaced, from
-- their own files): the stored counts and the index on the marks' kept rows go.
DROP INDEX pgdedup.duplicates_kept;
ALTER TABLE pgdedup.results DROP COLUMN duplicates, DROP COLUMN groups;
