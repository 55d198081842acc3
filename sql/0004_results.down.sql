-- Undo 0004's own objects (the migration then rebuilds revision 3's functions: 0003.down,
-- 0002.down, 0002, 0003).
DROP FUNCTION pgdedup.drop_collection(text, boolean);
DROP FUNCTION pgdedup.unmark(text);
DROP FUNCTION pgdedup.store_decision(integer, text, double precision, text, integer, text, timestamptz);
DROP FUNCTION pgdedup.decide(integer, double precision, text, integer, text);
DROP FUNCTION pgdedup.rank_rows(integer, text);
DROP FUNCTION pgdedup.check_exact_pairs(integer, double precision, integer, boolean, text);
DROP FUNCTION pgdedup.record_result(integer, text, double precision, integer, boolean, text, text);
DROP FUNCTION pgdedup.pairs(text, double precision, text, integer);
CREATE FUNCTION pgdedup.pairs(text, double precision, text)  -- 0002.down drops it
RETURNS TABLE (key_a text, key_b text, similarity double precision)
LANGUAGE sql AS 'SELECT NULL::text, NULL::text, NULL::float8 WHERE false';
DROP VIEW pgdedup.status;
CREATE VIEW pgdedup.status AS SELECT 1 AS placeholder;  -- 0002.down drops it
DROP TABLE pgdedup.results;
DELETE FROM pgdedup.duplicates WHERE target = 'column';
ALTER TABLE pgdedup.duplicates DROP CONSTRAINT duplicates_pkey;
ALTER TABLE pgdedup.duplicates DROP COLUMN target;
ALTER TABLE pgdedup.duplicates ADD PRIMARY KEY (collection_id, row_key);
ALTER TABLE pgdedup.collections DROP COLUMN index_version;
