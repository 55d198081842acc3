-- pgdedup schema, version 43: a first full dedupe stays linear when pgdedup.duplicates was
-- ANALYZEd while empty.
-- Revision 36's store_decision inserted the marks that were not stored yet with one statement
-- that looked in pgdedup.duplicates for each mark while filling it. When the table had been
-- ANALYZEd empty (a database-wide ANALYZE after the migration; autovacuum after the last
-- collection's marks were dropped), the planner took it for empty and scanned it whole for each
-- mark, the pages that statement had just written included: a first dedupe of a million rows
-- (214,234 marks) stored its decision in 660 s instead of ~10 s. The new marks are now found
-- first, into a temporary table, and inserted from there: no statement reads the table it
-- fills. (INSERT ... ON CONFLICT DO NOTHING avoids the look-up too, but cost 1.0-1.5 s against
-- 0.15 s on a rerun where every mark is stored already, measured at that size.)
-- Applied by migration 0043. Released files are never edited: a change is a new file + migration.

-- Store a full decision as in revision 37, the new marks found before any is inserted.
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
    -- the new marks are found first, in a statement that does not write the table it looks in
    DROP TABLE IF EXISTS pg_temp.pgdedup_new_marks;
    CREATE TEMP TABLE pgdedup_new_marks ON COMMIT DROP AS
        SELECT m.row_key, m.duplicate_of, m.similarity FROM pg_temp.pgdedup_marks m
        WHERE NOT EXISTS (SELECT 1 FROM pgdedup.duplicates d
                          WHERE d.collection_id = p_collection_id AND d.target = p_target AND d.row_key = m.row_key);
    INSERT INTO pgdedup.duplicates (collection_id, target, row_key, duplicate_of, similarity)
        SELECT p_collection_id, p_target, n.row_key, n.duplicate_of, n.similarity FROM pg_temp.pgdedup_new_marks n;
    DROP TABLE pg_temp.pgdedup_new_marks;
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
