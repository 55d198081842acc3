-- Undo 0014: the migration then puts back revision 4's rank_rows from its own file.
DROP FUNCTION pgdedup.rank_rows(integer, text);
