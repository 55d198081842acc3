-- pgdedup schema, version 20: revision 19's estimated_pairs asked has_table_privilege for
-- 'SELECT, INSERT, DELETE' on pgdedup.candidates, which is true when the role holds ANY of
-- them: a runtime role granted only SELECT there (the reader's grant run again after revision
-- 19), or SELECT and INSERT, took the parallel path and its full dedupe failed with
-- "permission denied for table candidates" instead of estimating in one process. Each
-- privilege is now asked for on its own.
--
-- Applied by migration 0020. Released files are never edited: a change is a new file + migration.

-- As in revision 19, with the privileges asked for one by one.
CREATE OR REPLACE FUNCTION pgdedup.estimated_pairs(p_collection_id integer, p_max_bucket integer, p_ranked boolean)
RETURNS TABLE (row_a bigint, row_b bigint, text_a bigint, text_b bigint, estimate double precision)
LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
BEGIN
    IF NOT (p_ranked AND pgdedup.reusing(p_collection_id, p_max_bucket)
            AND has_table_privilege('pgdedup.candidates', 'SELECT')
            AND has_table_privilege('pgdedup.candidates', 'INSERT')
            AND has_table_privilege('pgdedup.candidates', 'DELETE')) THEN
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

-- CREATE OR REPLACE resets the function's settings: revision 19's, again
ALTER FUNCTION pgdedup.estimated_pairs(integer, integer, boolean) SET min_parallel_table_scan_size = 0;

SELECT pgdedup.pin_search_paths();
