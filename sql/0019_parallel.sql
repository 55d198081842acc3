-- pgdedup schema, version 19: a full dedupe's candidate pairs are estimated by the server's
-- parallel workers. Revision 15 estimated them in the dedupe's own process only: its pairs come
-- from a temporary table (pg_temp.pgdedup_shared), and parallel workers cannot read a session's
-- temporary tables, so the planner never shares that query out. At a million rows (498,402
-- candidate pairs, 2 cores) it took 16.3 s, nearly all of it the signature comparisons (a
-- plpgsql loop, ~20 us a pair) and the two index lookups into signatures per pair.
--
-- Now, inside update_duplicates' own full run, the pairs are first written to
-- pgdedup.candidates, an unlogged table that workers can read, and the lookups and comparisons
-- of one query over it are shared among the leader and max_parallel_workers_per_gather workers
-- (2 by default): 2.8 s to write the pairs, then 7.5 s instead of 13.7 s (one process) at 1M.
-- The estimates are the same values, from the same pgdedup.similarity.
--
-- The pairs are written and deleted within the dedupe's transaction, so no other session ever
-- sees them, and a crash leaves nothing (an unlogged table is emptied by crash recovery, and an
-- aborted transaction's rows are dead). A role that may not write the table (one granted
-- privileges ON ALL TABLES IN SCHEMA pgdedup before this revision existed: such grants cover
-- the tables of that moment only) estimates in its own process, as before.
--
-- Applied by migration 0019. Released files are never edited: a change is a new file + migration.

CREATE UNLOGGED TABLE pgdedup.candidates (
    collection_id   integer NOT NULL,
    row_a           bigint NOT NULL,
    row_b           bigint NOT NULL
);
REVOKE ALL ON pgdedup.candidates FROM PUBLIC;
ALTER TABLE pgdedup.candidates ENABLE ROW LEVEL SECURITY;
CREATE POLICY readable_collection ON pgdedup.candidates
    USING (collection_id IN (SELECT c.collection_id FROM pgdedup.collections c));

-- Candidate pairs with their texts and estimated similarity, as in revision 11. Inside
-- update_duplicates' own full run (pgdedup.reusing), by parallel workers over
-- pgdedup.candidates when the role may write it; otherwise in this process.
CREATE OR REPLACE FUNCTION pgdedup.estimated_pairs(p_collection_id integer, p_max_bucket integer, p_ranked boolean)
RETURNS TABLE (row_a bigint, row_b bigint, text_a bigint, text_b bigint, estimate double precision)
LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
BEGIN
    IF NOT (p_ranked AND pgdedup.reusing(p_collection_id, p_max_bucket)
            AND has_table_privilege('pgdedup.candidates', 'SELECT, INSERT, DELETE')) THEN
        RETURN QUERY
            SELECT p.row_a, p.row_b, a.text_hash, b.text_hash, pgdedup.similarity(a.signature, b.signature)
            FROM pgdedup.candidate_pairs(p_collection_id, p_max_bucket, p_ranked) p
            JOIN pgdedup.signatures a ON a.collection_id = p_collection_id AND a.row_id = p.row_a
            JOIN pgdedup.signatures b ON b.collection_id = p_collection_id AND b.row_id = p.row_b;
        RETURN;
    END IF;
    INSERT INTO pgdedup.candidates (collection_id, row_a, row_b)
        SELECT p_collection_id, p.row_a, p.row_b FROM pgdedup.candidate_pairs(p_collection_id, p_max_bucket, true) p;
    RETURN QUERY
        SELECT p.row_a, p.row_b, a.text_hash, b.text_hash, pgdedup.similarity(a.signature, b.signature)
        FROM pgdedup.candidates p
        JOIN pgdedup.signatures a ON a.collection_id = p_collection_id AND a.row_id = p.row_a
        JOIN pgdedup.signatures b ON b.collection_id = p_collection_id AND b.row_id = p.row_b
        WHERE p.collection_id = p_collection_id;
    DELETE FROM pgdedup.candidates c WHERE c.collection_id = p_collection_id;
END $$;

-- the pairs of a 200,000-row collection fill ~3 MB, under the 8 MB default below which no
-- table is scanned in parallel; the planner's costs still keep a handful of pairs in one process
ALTER FUNCTION pgdedup.estimated_pairs(integer, integer, boolean) SET min_parallel_table_scan_size = 0;

SELECT pgdedup.pin_search_paths();
