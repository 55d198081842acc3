-- Undo 0017: drop its functions; the migration then puts back revision 16's walk from its own
-- file and pins its search_path.
DROP FUNCTION pgdedup.walk(integer, integer);
DROP FUNCTION pgdedup.decide_heads(integer, integer);
