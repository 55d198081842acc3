-- Undo 0015: drop its functions; the migration then puts back revision 2's candidate_pairs and
-- verified_pairs, revision 9's store_leaders and revision 11's edges, auto_pairs and
-- update_duplicates from their own files, and pins their search_path.
DROP FUNCTION pgdedup.update_duplicates(text, boolean, double precision, text, text, integer, boolean, text);
DROP FUNCTION pgdedup.store_leaders(integer, text, integer);
DROP FUNCTION pgdedup.auto_pairs(integer, double precision, integer, boolean);
DROP FUNCTION pgdedup.verified_pairs(integer, double precision, integer, boolean);
DROP FUNCTION pgdedup.candidate_pairs(integer, integer, boolean);
DROP FUNCTION pgdedup.reusing(integer, integer);
DROP FUNCTION pgdedup.shared_buckets(integer, integer, boolean);
DROP FUNCTION pgdedup.other_rows(integer, boolean);
