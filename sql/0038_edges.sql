-- pgdedup schema, version 38: a full decision takes its edges' texts from the run's estimates.
-- decide() made the text-level edges by looking up both rows of every accepted pair in
-- pgdedup.signatures for their text hash: two index scans and two heap visits an edge, 2.5-3.0 s
-- for 203,576 edges at a million rows (shared_buffers 128 MB). Inside update_duplicates' own full
-- run (verify estimate or auto) every edge comes from pg_temp.pgdedup_estimated, whose pairs
-- carry both text hashes already (estimated_pairs read them with the signatures they compared):
-- one hash join with it instead, 0.54-0.57 s there. Elsewhere (verify exact, or decide() called
-- outside such a run) the look-ups stay. The edges, hence the marks, are the same.
-- Applied by migration 0038. Released files are never edited: a change is a new file + migration.

-- The full decision, as in revision 6; the edges' texts from the run's estimates where edges()
-- reads its pairs from them (the same condition: pgdedup.reusing, verify other than exact).
CREATE OR REPLACE FUNCTION pgdedup.decide(p_collection_id integer, p_threshold double precision, p_keep_order text,
                                          p_max_bucket integer, p_verify text) RETURNS text
LANGUAGE plpgsql SET work_mem = '256MB' AS $$
DECLARE
    cid integer := p_collection_id;
    ord text;
BEGIN
    PERFORM pgdedup.check_args(p_threshold, p_max_bucket, p_verify);
    PERFORM pgdedup.keep_order_sql(cid, p_keep_order);
    PERFORM pgdedup.lock_collection(cid);
    ord := pgdedup.rank_rows(cid, p_keep_order);
    IF p_verify = 'exact' THEN
        PERFORM pgdedup.check_exact_pairs(cid, p_threshold, p_max_bucket, true, ord);
    END IF;
    DROP TABLE IF EXISTS pg_temp.pgdedup_edges;
    -- text-level edges, both directions
    IF p_verify <> 'exact' AND pgdedup.reusing(cid, p_max_bucket) THEN
        -- (row_a, row_b) is unique there: candidate_pairs lists each pair once
        CREATE TEMP TABLE pgdedup_edges ON COMMIT DROP AS
            SELECT e.text_a AS h1, e.text_b AS h2, v.similarity
            FROM pgdedup.edges(cid, p_threshold, p_max_bucket, p_verify, true) v
            JOIN pg_temp.pgdedup_estimated e ON e.row_a = v.row_a AND e.row_b = v.row_b;
    ELSE
        CREATE TEMP TABLE pgdedup_edges ON COMMIT DROP AS
            SELECT sa.text_hash AS h1, sb.text_hash AS h2, v.similarity
            FROM pgdedup.edges(cid, p_threshold, p_max_bucket, p_verify, true) v
            JOIN pgdedup.signatures sa ON sa.collection_id = cid AND sa.row_id = v.row_a
            JOIN pgdedup.signatures sb ON sb.collection_id = cid AND sb.row_id = v.row_b;
    END IF;
    INSERT INTO pg_temp.pgdedup_edges SELECT h2, h1, similarity FROM pg_temp.pgdedup_edges;
    PERFORM pgdedup.walk();
    RETURN ord;
END $$;
ALTER FUNCTION pgdedup.decide(integer, double precision, text, integer, text) SET client_min_messages = warning;

SELECT pgdedup.pin_search_paths();
