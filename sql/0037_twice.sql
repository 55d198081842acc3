-- pgdedup schema, version 37: a full dedupe refuses a decision that marks a key twice.
-- Until revision 36 a full dedupe inserted every mark, and the primary key of pgdedup.duplicates
-- refused a key decided twice (a source key that stopped being unique after it was indexed: the
-- rows are ranked by joining the source on its key). Revision 36 writes the difference
-- instead, so one of the two marks was kept silently and the stored count was one too many
-- (found in review). The decision is checked first again, with a message that says why.
-- Applied by migration 0037. Released files are never edited: a change is a new file + migration.

-- Store a full decision, as in revision 36, after checking that no key is decided twice.
CREATE OR REPLACE FUNCTION pgdedup.store_decision(p_collection_id integer, p_target text, p_threshold double precision,
                                                  p_keep_order text, p_max_bucket integer, p_verify text,
                                                  p_started timestamptz)
RETURNS TABLE (rows_examined bigint, duplicates bigint, groups bigint)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    t double precision := coalesce(p_threshold,
        (SELECT c.threshold FROM pgdedup.collections c WHERE c.collection_id = p_collection_id));
    twice text;
BEGIN
    -- a row decided twice (its key is no longer unique in the source table) was refused by the
    -- primary key when every mark was inserted; writing the difference would keep one of them
    SELECT m.row_key INTO twice FROM pg_temp.pgdedup_marks m GROUP BY m.row_key HAVING count(*) > 1 LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'collection %: the key % stands for more than one row of its source table; its key column must be unique (nothing was written)',
            (SELECT c.name FROM pgdedup.collections c WHERE c.collection_id = p_collection_id), twice
            USING ERRCODE = 'unique_violation';
    END IF;
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
