-- pgdedup schema, version 33: verify "auto"'s up-front checks of an incremental dedupe also
-- cover the pairs a changed text makes in capped buckets.
-- An incremental auto dedupe first checks the ambiguous pairs it is likely to meet
-- (probable_unchecked: those of the changed texts), then decides; if the decision meets a pair
-- without a check, it returns, the pairs are checked, and the region is decided again from
-- the start. probable_unchecked looked only into buckets of at most max_bucket rows, but in a
-- capped bucket (more texts than max_bucket) a member is a candidate of the bucket's leaders:
-- at a million generated feed items every change batch (1,000 new rows, a dozen of them briefs
-- in buckets of ~300 rows) met 1-44 such pairs, all of a changed text with a leader, and so
-- decided its region twice (~1 s of a ~2.3 s run). The pairs of a changed text with the leaders
-- the last run stored for its capped buckets are now checked up front too, when that run's
-- leaders are the ones this run starts from (same max_bucket). Still found only by the decision
-- (then checked, and the region decided again), e.g.: a changed text that becomes a leader of a
-- capped bucket and meets every member; a bucket the batch pushed over the cap (no stored
-- leaders yet); a bucket of more than max_bucket rows but at most max_bucket texts (exact
-- copies). A predicted pair the decision does not meet (a leader pushed out by another change)
-- costs a check, nothing else.
-- Applied by migration 0033. Released files are never edited: a change is a new file + migration.

-- The pairs without an exact check that an incremental auto run is likely to meet: as in
-- revision 31, plus the changed texts' pairs with the stored leaders of their capped buckets.
CREATE OR REPLACE FUNCTION pgdedup.probable_unchecked(p_collection_id integer, p_target text, p_threshold double precision,
                                                      p_max_bucket integer)
RETURNS TABLE (row_a bigint, row_b bigint, text_a bigint, text_b bigint)
LANGUAGE sql STABLE AS $$
    WITH changed AS (
        SELECT DISTINCT g.row_id, g.text_hash, g.signature, g.buckets, g.feature_count
        FROM pgdedup.results r
        JOIN pgdedup.changes ch ON ch.collection_id = r.collection_id AND ch.seq > coalesce(r.change_seq, 0)
        JOIN pgdedup.signatures g ON g.collection_id = r.collection_id AND g.row_key = ch.row_key
                                 AND g.feature_count > 0
        WHERE r.collection_id = p_collection_id AND r.target = p_target
    ), mates AS (
        -- a bucket of at most p_max_bucket rows: each of its other rows (a bucket read once, and
        -- no further than one row past the cap)
        SELECT DISTINCT c.row_id AS ra, c.text_hash AS ha, c.signature AS sa, c.feature_count AS fa, m.row_id AS rb
        FROM changed c
        CROSS JOIN LATERAL unnest(c.buckets) WITH ORDINALITY AS u(bucket, band)
        CROSS JOIN LATERAL (SELECT array_agg(k.row_id) AS row_ids
                            FROM (SELECT k.row_id FROM pgdedup.band_keys k
                                  WHERE k.collection_id = p_collection_id AND k.band = u.band - 1 AND k.bucket = u.bucket
                                  LIMIT p_max_bucket + 1) k) b
        CROSS JOIN LATERAL unnest(b.row_ids) AS m(row_id)
        WHERE cardinality(b.row_ids) <= p_max_bucket AND m.row_id <> c.row_id
        UNION
        -- a capped bucket: its leaders as the last run stored them (if it stored them for this
        -- cap), each leader text once per changed row, by its first row
        SELECT c.row_id, c.text_hash, c.signature, c.feature_count,
               (SELECT min(g.row_id) FROM pgdedup.signatures g
                WHERE g.collection_id = p_collection_id AND g.text_hash = x.leader)
        FROM (SELECT DISTINCT c.row_id, l.text_hash AS leader
              FROM changed c
              CROSS JOIN LATERAL unnest(c.buckets) WITH ORDINALITY AS u(bucket, band)
              JOIN pgdedup.leaders l ON l.collection_id = p_collection_id AND l.target = p_target
                                    AND l.band = u.band - 1 AND l.bucket = u.bucket AND l.text_hash <> c.text_hash
              WHERE EXISTS (SELECT 1 FROM pgdedup.results r
                            WHERE r.collection_id = p_collection_id AND r.target = p_target
                              AND r.leaders AND r.max_bucket = p_max_bucket)) x
        JOIN changed c ON c.row_id = x.row_id
    )
    SELECT DISTINCT ON (least(m.ha, g.text_hash), greatest(m.ha, g.text_hash))
           m.ra, m.rb, least(m.ha, g.text_hash), greatest(m.ha, g.text_hash)
    FROM mates m
    -- each mate by its row id (OFFSET 0: planned as a join, the mates' row estimate tipped the
    -- function's generic plan into hashing every signature, spilling ~300 MB at 1M rows)
    CROSS JOIN LATERAL (SELECT g.text_hash, g.signature, g.feature_count FROM pgdedup.signatures g
                        WHERE g.collection_id = p_collection_id AND g.row_id = m.rb
                          AND g.text_hash <> m.ha AND g.feature_count > 0 OFFSET 0) g
    CROSS JOIN LATERAL (SELECT pgdedup.similarity(m.sa, g.signature) AS estimate,
                               least(m.fa, g.feature_count) AS fewest) e,
         pgdedup.collections c, pgdedup.auto_bands(p_threshold, c.num_perm) band
    WHERE c.collection_id = p_collection_id
      AND CASE WHEN e.fewest < c.num_perm THEN e.estimate >= band.small_lo
               ELSE e.estimate >= band.lo AND e.estimate < band.hi END
      AND NOT EXISTS (SELECT 1 FROM pgdedup.checked ch
                      WHERE ch.collection_id = p_collection_id
                        AND ch.text_a = least(m.ha, g.text_hash) AND ch.text_b = greatest(m.ha, g.text_hash))
    ORDER BY least(m.ha, g.text_hash), greatest(m.ha, g.text_hash)
$$;

SELECT pgdedup.pin_search_paths();
-- Its generic plan is costed high enough to be JIT-compiled, which took ~0.8 s of a ~1.2 s call
-- at a million rows (the work itself is a few thousand index look-ups).
ALTER FUNCTION pgdedup.probable_unchecked(integer, text, double precision, integer) SET jit = off;
