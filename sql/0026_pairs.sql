-- pgdedup schema, version 26: candidate pairs read each shared bucket's row ids once.
--
-- * candidate_pairs (revision 15) took the pairs of a bucket by subscript, ids[i] and ids[j]
--   for every pair, from pg_temp.pgdedup_shared, where a bucket of more than ~250 members is
--   stored out of line (TOAST): every subscript and cardinality() read the whole array back
--   from the TOAST table, so a capped bucket of n members cost ~100 n such reads. 200,000 rows
--   + 100 clusters of 300 near-copies (1,600 capped buckets, 2.7 M pairs): 232 s. Each array is
--   now copied out once (a slice of itself) into the materialized CTE: 17 s. At a million
--   generated rows (15 capped buckets): 2.7-3.2 s -> 2.1-2.3 s.
-- * The pairs are the same (tests/test_capped.py compares them with pairs made by hand).
--
-- Applied by migration 0026. Released files are never edited: a change is a new file + migration.

-- Candidate pairs (row_a < row_b) of representatives sharing a bucket in at least one band, as
-- in revision 15: every pair of a bucket of at most p_max_bucket members, each member with the
-- first p_max_bucket members (its leaders) of a larger one.
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
    -- most shared buckets hold two members: their one pair needs no series; the slice copies a
    -- stored (TOASTed) array out once, so that subscripts do not read it back each time
    RETURN QUERY EXECUTE format(
        'WITH s AS MATERIALIZED (SELECT b.ids[1:cardinality(b.ids)] AS ids FROM %s b)
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
