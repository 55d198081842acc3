-- Undo 0011's own objects; the migration then puts back revision 3's check_args, revision 4's
-- edges and revision 9's update_duplicates, judge_pairs and edge_floor from their own files, and pins their
-- search_path.
DROP FUNCTION pgdedup.probable_unchecked(integer, text, double precision, integer);
DROP FUNCTION pgdedup.unchecked_pairs(integer, double precision, integer, boolean);
DROP FUNCTION pgdedup.auto_pairs(integer, double precision, integer, boolean);
DROP FUNCTION pgdedup.estimated_pairs(integer, integer, boolean);
DROP FUNCTION pgdedup.no_exact_check(integer);
DROP FUNCTION pgdedup.auto_band(double precision, integer);
DROP FUNCTION pgdedup.check_args(double precision, integer, text, integer);
DROP FUNCTION pgdedup.update_duplicates(text, boolean, double precision, text, text, integer, boolean, text);
DROP FUNCTION pgdedup.judge_pairs(integer, double precision, text);
DROP FUNCTION pgdedup.edge_floor(integer, double precision, text);
DROP TABLE pgdedup.checked;
