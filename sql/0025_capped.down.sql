-- Back to revision 24: revision 15's shared_buckets (a subquery per capped bucket, other rows
-- filtered by a hashed NOT IN).
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
         )
         SELECT s.band, s.bucket, s.ids FROM shared s WHERE cardinality(s.ids) <= $2
         UNION ALL
         SELECT s.band, s.bucket, ARRAY(%s) FROM shared s WHERE cardinality(s.ids) > $2',
        CASE WHEN p_ranked
             THEN 'SELECT u.id FROM unnest(s.ids) AS u(id)
                   JOIN pgdedup.signatures g ON g.collection_id = $1 AND g.row_id = u.id
                   JOIN pg_temp.pgdedup_rank k ON k.text_hash = g.text_hash
                   ORDER BY k.rnk, u.id'
             ELSE 'SELECT u.id FROM unnest(s.ids) AS u(id) ORDER BY u.id' END)
        USING p_collection_id, p_max_bucket, p_ranked;
END $$;

SELECT pgdedup.pin_search_paths();
