-- Undo 0012.
DROP FUNCTION pgdedup.explain(text, anyelement, anyelement);
