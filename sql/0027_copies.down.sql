-- Back to revision 26: revision 25's shared_buckets (the exact copies' rows as an array parameter).
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
