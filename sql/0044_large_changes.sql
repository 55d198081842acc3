-- pgdedup schema, version 44: a large batch of changes no longer makes a dedupe slow.
-- Revision 34's store_changes adjusted the stored count of groups by asking, for each kept row
-- a replaced or new mark points at, whether a replaced mark pointed at it: an EXISTS over the
-- replaced marks (a temporary table without an index), which PostgreSQL runs as a scan of all
-- of them per kept row. For 24,000 changed rows of a 100,000-row collection (~8,600 kept rows,
-- ~10,800 replaced marks) that statement took 8.0 s of an 11 s store. It now learns that from
-- one grouping of the replaced and new marks.
-- And a dedupe after more logged changes than 1/25 of the rows indexed (and than 1,000) runs in
-- full: both give the same marks (docs/features.md), and an incremental run costs ~1 ms per
-- changed row where a full run costs ~30-40 us per row of the collection, so past ~4 % of the
-- rows it is the slower one (100,000 rows, 2 cores: 3,591 changes 4.7 s against 4.6 s in full;
-- 11,888 changes 9.8 s against 4.4 s; 23,548 changes 15.7 s against 3.8 s). Below 1,000 changes
-- an incremental run takes about a second at most, whatever the collection's size.
-- Applied by migration 0044. Released files are never edited: a change is a new file + migration.

-- The store of an incremental run, as in revision 34, the groups counted from one grouping.
CREATE OR REPLACE FUNCTION pgdedup.store_changes(p_collection_id integer, p_target text, p_threshold double precision,
                                                 p_keep_order text, p_max_bucket integer, p_started timestamptz,
                                                 p_texts bigint)
RETURNS TABLE (rows_examined bigint, duplicates bigint, groups bigint)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    t double precision := coalesce(p_threshold,
        (SELECT c.threshold FROM pgdedup.collections c WHERE c.collection_id = p_collection_id));
    keys text[] := ARRAY(SELECT DISTINCT k.row_key FROM pg_temp.pgdedup_redone k);
    known pgdedup.results;
    total bigint;
    kept bigint;
BEGIN
    SELECT * INTO known FROM pgdedup.results r WHERE r.collection_id = p_collection_id AND r.target = p_target;
    DROP TABLE IF EXISTS pg_temp.pgdedup_before;
    -- (by key look-ups: ANY of an array, where a join with the temp table was planned as a
    -- hash of every mark of the target)
    CREATE TEMP TABLE pgdedup_before ON COMMIT DROP AS
        SELECT d.row_key, d.duplicate_of FROM pgdedup.duplicates d
        WHERE d.collection_id = p_collection_id AND d.target = p_target AND d.row_key = ANY (keys);
    DELETE FROM pgdedup.duplicates d
    WHERE d.collection_id = p_collection_id AND d.target = p_target AND d.row_key = ANY (keys);
    INSERT INTO pgdedup.duplicates (collection_id, target, row_key, duplicate_of, similarity)
        SELECT p_collection_id, p_target, m.row_key, m.duplicate_of, m.similarity FROM pg_temp.pgdedup_marks m;
    IF known.duplicates IS NULL OR known.groups IS NULL THEN
        SELECT count(*), count(DISTINCT d.duplicate_of) INTO total, kept
        FROM pgdedup.duplicates d WHERE d.collection_id = p_collection_id AND d.target = p_target;
    ELSE
        total := known.duplicates - (SELECT count(*) FROM pg_temp.pgdedup_before)
                 + (SELECT count(*) FROM pg_temp.pgdedup_marks);
        SELECT known.groups + count(*) FILTER (WHERE g.has_now AND NOT g.had) - count(*) FILTER (WHERE g.had AND NOT g.has_now)
        INTO kept
        FROM (SELECT EXISTS (SELECT 1 FROM pgdedup.duplicates d
                             WHERE d.collection_id = p_collection_id AND d.target = p_target
                               AND d.duplicate_of = k.duplicate_of) AS has_now,
                     k.replaced
                     OR EXISTS (SELECT 1 FROM pgdedup.duplicates d
                                WHERE d.collection_id = p_collection_id AND d.target = p_target
                                  AND d.duplicate_of = k.duplicate_of AND d.row_key <> ALL (keys)) AS had
              -- (whether a replaced mark pointed at k, from one grouping: asked per kept row
              -- instead, it scanned the replaced marks once for each)
              FROM (SELECT u.duplicate_of, bool_or(u.replaced) AS replaced
                    FROM (SELECT b.duplicate_of, true AS replaced FROM pg_temp.pgdedup_before b
                          UNION ALL SELECT m.duplicate_of, false FROM pg_temp.pgdedup_marks m) u
                    GROUP BY u.duplicate_of) k) g;
    END IF;
    PERFORM pgdedup.record_result(p_collection_id, p_target, t, p_max_bucket, true, p_keep_order, 'estimate');
    UPDATE pgdedup.results r SET duplicates = total, groups = kept
    WHERE r.collection_id = p_collection_id AND r.target = p_target;
    INSERT INTO pgdedup.runs (collection_id, kind, started_at, stats)
    SELECT p_collection_id, 'dedupe', p_started, jsonb_build_object(
        'incremental', true, 'rows_examined', cardinality(keys), 'texts', p_texts,
        'marks_changed', (SELECT count(*) FROM pg_temp.pgdedup_before b FULL JOIN pg_temp.pgdedup_marks m
                          ON m.row_key = b.row_key
                          WHERE b.duplicate_of IS DISTINCT FROM m.duplicate_of),
        'duplicates', total, 'groups', kept, 'threshold', t, 'keep_order', p_keep_order,
        'verify', 'estimate', 'target', p_target,
        'seconds', extract(epoch FROM clock_timestamp() - p_started));
    RETURN QUERY SELECT cardinality(keys)::bigint, total, kept;
END $$;

-- Whether the changes logged since target p_target's stored result are too many for an
-- incremental run to pay: more than 1/25 of the rows indexed and more than 1,000. (Read before the run takes the
-- collection's lock: an index that logs more changes in between only makes the choice less apt.)
CREATE FUNCTION pgdedup.many_changes(p_collection_id integer, p_target text) RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT coalesce((SELECT count(*) FROM pgdedup.changes ch
                     WHERE ch.collection_id = p_collection_id AND ch.seq > r.change_seq)
                    > greatest(c.rows_indexed / 25, 1000), false)
    FROM pgdedup.collections c
    LEFT JOIN pgdedup.results r ON r.collection_id = c.collection_id AND r.target = p_target
    WHERE c.collection_id = p_collection_id
$$;

-- Bring one target up to date, as in revision 24, in full when many_changes says so.
CREATE OR REPLACE FUNCTION pgdedup.update_duplicates(p_collection text, p_alter boolean DEFAULT true,
                                          p_threshold double precision DEFAULT NULL, p_keep_order text DEFAULT NULL,
                                          p_column text DEFAULT 'duplicate_of', p_max_bucket integer DEFAULT 100,
                                          p_full boolean DEFAULT false, p_verify text DEFAULT 'estimate')
RETURNS TABLE (kind text, rows_examined bigint, duplicates bigint, groups bigint)
LANGUAGE plpgsql AS $$
BEGIN
    IF p_alter THEN
        PERFORM pgdedup.guard_marking(p_collection, p_column);
    ELSE
        PERFORM pgdedup.guard_collection_source(p_collection);
    END IF;
    RETURN QUERY SELECT * FROM pgdedup.update_duplicates_unchecked(
        p_collection, p_alter, p_threshold, p_keep_order, p_column, p_max_bucket,
        p_full OR pgdedup.many_changes(pgdedup.collection_id(p_collection),
                                       CASE WHEN p_alter THEN 'column' ELSE 'view' END),
        p_verify);
END $$;

SELECT pgdedup.pin_search_paths();
