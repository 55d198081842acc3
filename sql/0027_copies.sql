-- pgdedup schema, version 27: revision 25's shared_buckets, with the exact copies' rows filtered
-- through a hashed subplan again.
--
-- * Revision 25 passed the rows that do not stand for their text (other_rows) as an array
--   parameter and filtered with `<> ALL ($3)`. EXECUTE ... USING hands parameters to the
--   planner as constants, so the whole array became part of the plan: ~250-300 bytes of backend
--   memory per element that work_mem does not bound (3 million exact copies: 1,169 MB at the
--   peak against 706 MB with revision 15's subplan, same time), and every EXPLAIN or
--   auto_explain of the statement printed it (41 MB of log for one call there). The hashed
--   `NOT IN (SELECT pgdedup.other_rows(...))` of revision 15 is back; the capped buckets are
--   still ranked in one join (revision 25).
-- * The result is the same (tests/test_capped.py).
--
-- Applied by migration 0027. Released files are never edited: a change is a new file + migration.

-- The buckets two or more representatives share, as in revision 25 (its comment says what
-- they hold and in which order).
CREATE OR REPLACE FUNCTION pgdedup.shared_buckets(p_collection_id integer, p_max_bucket integer, p_ranked boolean)
RETURNS TABLE (band smallint, bucket bigint, ids bigint[])
LANGUAGE plpgsql STABLE SET work_mem = '256MB' AS $$
BEGIN
    RETURN QUERY EXECUTE format(
        'WITH shared AS MATERIALIZED (
             SELECT b.band, b.bucket, array_agg(b.row_id) AS ids
             FROM pgdedup.band_keys b
             WHERE b.collection_id = $1 AND b.row_id NOT IN (SELECT pgdedup.other_rows($1, $3))
             GROUP BY b.band, b.bucket
             HAVING count(*) > 1
         ), capped AS (
             SELECT s.band, s.bucket, array_agg(u.id ORDER BY %s) AS ids
             FROM shared s CROSS JOIN LATERAL unnest(s.ids) AS u(id) %s
             WHERE cardinality(s.ids) > $2
             GROUP BY s.band, s.bucket
         )
         SELECT s.band, s.bucket, s.ids FROM shared s WHERE cardinality(s.ids) <= $2
         UNION ALL
         SELECT s.band, s.bucket, coalesce(c.ids, ''{}'') FROM shared s
         LEFT JOIN capped c ON c.band = s.band AND c.bucket = s.bucket
         WHERE cardinality(s.ids) > $2',
        CASE WHEN p_ranked THEN 'k.rnk, u.id' ELSE 'u.id' END,
        CASE WHEN p_ranked
             THEN 'JOIN pgdedup.signatures g ON g.collection_id = $1 AND g.row_id = u.id
                   JOIN pg_temp.pgdedup_rank k ON k.text_hash = g.text_hash'
             ELSE '' END)
        USING p_collection_id, p_max_bucket, p_ranked;
END $$;

SELECT pgdedup.pin_search_paths();
