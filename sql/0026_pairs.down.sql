-- Back to revision 25: revision 15's candidate_pairs (subscripts on the arrays as stored).
CREATE OR REPLACE FUNCTION pgdedup.candidate_pairs(p_collection_id integer, p_max_bucket integer DEFAULT 100,
                                                   p_ranked boolean DEFAULT false)
RETURNS TABLE (row_a bigint, row_b bigint)
LANGUAGE plpgsql STABLE SET work_mem = '256MB' AS $$
DECLARE
    source text := 'pgdedup.shared_buckets($1, $2, $3)';
BEGIN
    IF p_ranked AND pgdedup.reusing(p_collection_id, p_max_bucket) AND to_regclass('pg_temp.pgdedup_shared') IS NOT NULL THEN
        source := 'pg_temp.pgdedup_shared';
    END IF;
    -- most shared buckets hold two members: their one pair needs no series
    RETURN QUERY EXECUTE format(
        'WITH s AS MATERIALIZED (SELECT b.ids FROM %s b)
         SELECT DISTINCT p.row_a, p.row_b FROM (
             SELECT least(s.ids[1], s.ids[2]) AS row_a, greatest(s.ids[1], s.ids[2]) AS row_b
             FROM s WHERE cardinality(s.ids) = 2
             UNION ALL
             SELECT least(s.ids[i], s.ids[j]), greatest(s.ids[i], s.ids[j])
             FROM s, generate_series(1, least(cardinality(s.ids) - 1, $2)) AS i,
                  generate_series(i + 1, cardinality(s.ids)) AS j
             WHERE cardinality(s.ids) > 2
         ) p', source)
        USING p_collection_id, p_max_bucket, p_ranked;
END $$;

SELECT pgdedup.pin_search_paths();
