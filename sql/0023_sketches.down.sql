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
-- Revision 6's status view (revision 21's relation_of, which the new one calls, goes with 21).
CREATE OR REPLACE VIEW pgdedup.status AS
SELECT c.name, format('%I.%I', c.source_schema, c.source_table) AS source, c.key_column, c.text_columns,
       c.unit, c.ngram, c.num_perm, c.bands, c.rows_per_band, c.threshold, c.band_threshold, c.seed,
       c.rows_indexed,
       (SELECT count(*) FROM pgdedup.duplicates d WHERE d.collection_id = c.collection_id AND d.target = 'view') AS duplicates,
       c.indexed_at,
       (SELECT max(finished_at) FROM pgdedup.runs r WHERE r.collection_id = c.collection_id AND r.kind = 'dedupe') AS deduped_at,
       (SELECT r.stats FROM pgdedup.runs r WHERE r.collection_id = c.collection_id AND r.kind = 'index'
        ORDER BY r.finished_at DESC LIMIT 1) AS last_index,
       (SELECT r.stats FROM pgdedup.runs r WHERE r.collection_id = c.collection_id AND r.kind = 'dedupe'
        ORDER BY r.finished_at DESC LIMIT 1) AS last_dedupe,
       c.mark_column,
       (SELECT count(*) FROM pgdedup.duplicates d WHERE d.collection_id = c.collection_id AND d.target = 'column') AS marked,
       ARRAY(SELECT r.target FROM pgdedup.results r
             WHERE r.collection_id = c.collection_id AND r.index_version <> c.index_version ORDER BY 1) AS stale,
       to_regclass(format('%I.%I', c.source_schema, c.source_table)) IS NULL AS source_missing,
       c.tracked,
       (SELECT count(*) FROM pgdedup.queue q WHERE q.collection_id = c.collection_id) AS queued,
       (SELECT count(DISTINCT p.row_key) FROM pgdedup.pending p WHERE p.collection = c.name) AS pending
FROM pgdedup.collections c;
DO $$
BEGIN
    IF current_setting('server_version_num')::int >= 150000 THEN  -- CREATE OR REPLACE VIEW reset it
        ALTER VIEW pgdedup.status SET (security_invoker = true);
    END IF;
END $$;
