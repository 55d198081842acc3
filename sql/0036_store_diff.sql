-- pgdedup schema, version 36: a full dedupe writes only the marks that differ from the stored
-- ones.
-- store_decision deleted every stored mark of the target and inserted the new ones: at a
-- million generated feed items ~215,000 rows each way, 2.5-3.1 s of a ~30-40 s full dedupe,
-- and ~1.3 s more since revision 34's index on the kept rows. A full run usually follows
-- earlier runs of the same target and changes few of their marks; it now deletes the marks of
-- rows no longer marked, updates those whose kept row or similarity changed, and inserts the
-- new ones, as write_marks does for the marking column. The stored result is the same.
-- Applied by migration 0036. Released files are never edited: a change is a new file + migration.

-- Store a full decision, as in revision 34, writing the difference.
CREATE OR REPLACE FUNCTION pgdedup.store_decision(p_collection_id integer, p_target text, p_threshold double precision,
                                                  p_keep_order text, p_max_bucket integer, p_verify text,
                                                  p_started timestamptz)
RETURNS TABLE (rows_examined bigint, duplicates bigint, groups bigint)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    t double precision := coalesce(p_threshold,
        (SELECT c.threshold FROM pgdedup.collections c WHERE c.collection_id = p_collection_id));
BEGIN
    ANALYZE pg_temp.pgdedup_marks;  -- (three joins with the stored marks follow)
    DELETE FROM pgdedup.duplicates d
    WHERE d.collection_id = p_collection_id AND d.target = p_target
      AND NOT EXISTS (SELECT 1 FROM pg_temp.pgdedup_marks m WHERE m.row_key = d.row_key);
    UPDATE pgdedup.duplicates d SET duplicate_of = m.duplicate_of, similarity = m.similarity
    FROM pg_temp.pgdedup_marks m
    WHERE d.collection_id = p_collection_id AND d.target = p_target AND d.row_key = m.row_key
      AND (d.duplicate_of, d.similarity) IS DISTINCT FROM (m.duplicate_of, m.similarity);
    INSERT INTO pgdedup.duplicates (collection_id, target, row_key, duplicate_of, similarity)
        SELECT p_collection_id, p_target, m.row_key, m.duplicate_of, m.similarity FROM pg_temp.pgdedup_marks m
        WHERE NOT EXISTS (SELECT 1 FROM pgdedup.duplicates d
                          WHERE d.collection_id = p_collection_id AND d.target = p_target AND d.row_key = m.row_key);
    PERFORM pgdedup.record_result(p_collection_id, p_target, t, p_max_bucket, true, p_keep_order, p_verify);
    RETURN QUERY
        WITH stats AS (
            SELECT (SELECT count(*) FROM pgdedup.signatures s WHERE s.collection_id = p_collection_id) AS rows_examined,
                   (SELECT count(*) FROM pg_temp.pgdedup_marks) AS duplicates,
                   (SELECT count(DISTINCT m.duplicate_of) FROM pg_temp.pgdedup_marks m) AS groups
        ), counted AS (
            UPDATE pgdedup.results r SET duplicates = st.duplicates, groups = st.groups
            FROM stats st WHERE r.collection_id = p_collection_id AND r.target = p_target
        ), run AS (
            INSERT INTO pgdedup.runs (collection_id, kind, started_at, stats)
            SELECT p_collection_id, 'dedupe', p_started, jsonb_build_object(
                'rows_examined', st.rows_examined, 'duplicates', st.duplicates, 'groups', st.groups,
                'threshold', t, 'keep_order', p_keep_order, 'verify', p_verify, 'target', p_target,
                'seconds', extract(epoch FROM clock_timestamp() - p_started))
            FROM stats st
        )
        SELECT * FROM stats;
END $$;

SELECT pgdedup.pin_search_paths();
