-- Back to revision 22: signatures as int4[] again. Their 32-bit values are gone, so each row
-- keeps its 16-bit values as integers (estimates between stored rows stay right) and its source
-- md5 is cleared, and a tracked collection has "compare every row" queued: the next index
-- signs every row again. Until then exact checks report the rows as changed, and a text signed
-- by the client (similar --text, check, add) is compared with 16-bit values: run `pgdedup
-- index` on every collection right after the downgrade. Results computed before are stale (a
-- new index version).
DROP FUNCTION pgdedup.similar_to_sketch(text, bit varying, bigint[], double precision, integer, text);
CREATE FUNCTION pgdedup.unsketch(p_sketch bit varying) RETURNS integer[]
LANGUAGE sql IMMUTABLE STRICT AS $$
    SELECT ARRAY(SELECT substring(p_sketch FROM 16 * i + 1 FOR 16)::bit(16)::integer
                 FROM generate_series(0, length(p_sketch) / 16 - 1) AS i ORDER BY i)
$$;
ALTER TABLE pgdedup.signatures ALTER COLUMN signature TYPE integer[] USING pgdedup.unsketch(signature);
DROP FUNCTION pgdedup.unsketch(bit varying);
COMMENT ON COLUMN pgdedup.signatures.signature IS NULL;
UPDATE pgdedup.signatures SET source_md5 = '00000000-0000-0000-0000-000000000000';
UPDATE pgdedup.collections SET index_version = index_version + 1;
INSERT INTO pgdedup.queue (collection_id, row_key) SELECT collection_id, NULL FROM pgdedup.collections WHERE tracked;
DROP FUNCTION pgdedup.similarity(bit varying, bit varying);
DROP FUNCTION pgdedup.sketch(integer[]);
