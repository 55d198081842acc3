-- pgdedup schema, version 25: the leaders of capped buckets found in one pass.
--
-- * A bucket with more than max_bucket members lists them in leader order (revision 15's
--   shared_buckets): with p_ranked, by keep order. Revision 15 ordered each such bucket with a
--   subquery of its own, which read the whole rank table (pg_temp.pgdedup_rank, one row per
--   text, no index) once per capped bucket: a feed with many large clusters of near-copies made
--   it quadratic (200,000 rows + 100 clusters of 300 near-copies, 1,600 capped buckets: 28 s).
--   The members of every capped bucket are now ranked in one join and aggregated in keep
--   order (2.7 s there).
-- * The rows that do not stand for their text (other_rows) are read once into an array and
--   filtered with `<> ALL`, which PostgreSQL hashes, instead of a hashed NOT IN subplan
--   probed per band key (at a million rows, 16 million keys: 8.5-9.2 s -> 7.3-7.6 s for the
--   whole function).
-- * The result is the same, bucket for bucket and member for member, in the same order
--   (tests/test_oracles_sql.py, tests/test_capped.py; bench/revisions.py --clusters).
--
-- Applied by migration 0025. Released files are never edited: a change is a new file + migration.

-- The buckets two or more representatives share (band, bucket, their row ids), as in revision
-- 15: a bucket of at most p_max_bucket members lists them in no particular order; a larger one
-- in leader order, by row id, or with p_ranked by keep order (pg_temp.pgdedup_rank), ties by
-- row id (members without a signature or rank left out, as before).
CREATE OR REPLACE FUNCTION pgdedup.shared_buckets(p_collection_id integer, p_max_bucket integer, p_ranked boolean)
RETURNS TABLE (band smallint, bucket bigint, ids bigint[])
LANGUAGE plpgsql STABLE SET work_mem = '256MB' AS $$
BEGIN
    RETURN QUERY EXECUTE format(
        'WITH shared AS MATERIALIZED (
             SELECT b.band, b.bucket, array_agg(b.row_id) AS ids
             FROM pgdedup.band_keys b
             WHERE b.collection_id = $1 AND b.row_id <> ALL ($3)
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
        USING p_collection_id, p_max_bucket, ARRAY(SELECT pgdedup.other_rows(p_collection_id, p_ranked));
END $$;

SELECT pgdedup.pin_search_paths();
