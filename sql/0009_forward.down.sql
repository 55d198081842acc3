-- Undo 0009's own objects; the migration then puts back revision 6's definitions of the
-- functions 0009 replaced (walk, decide_changes, update_duplicates, record_result) from
-- 0006_living.sql itself, and pins their search_path.
DROP FUNCTION pgdedup.update_duplicates(text, boolean, double precision, text, text, integer, boolean);
DROP FUNCTION pgdedup.decide_changes(integer, text, double precision, text, integer, bigint, text);
DROP FUNCTION pgdedup.judge_pairs(integer, double precision, text);
DROP FUNCTION pgdedup.walk();
DROP FUNCTION pgdedup.store_leaders(integer, text, integer);
DROP FUNCTION pgdedup.stage(text, timestamptz);
DROP FUNCTION pgdedup.edge_floor(integer, double precision, text);
DROP TABLE pgdedup.leaders;
ALTER TABLE pgdedup.results DROP COLUMN leaders;
