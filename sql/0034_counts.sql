-- pgdedup schema, version 34: an incremental dedupe stores its result without reading the
-- whole of it again.
-- At a million generated feed items (~215,000 duplicates), storing an incremental decision of
-- ~1,500 rows took ~0.2 s of a ~1.3 s run: the old marks of the re-decided rows were deleted
-- through a hash of every stored mark of the target (a temp table of keys without statistics
-- made the planner choose it; ~70-100 ms), and both counts the run returns (duplicates and
-- groups) were counted again over all of them (count(DISTINCT) of 215,000 keys, ~100 ms).
-- Now the old marks go by primary key look-ups, and the counts are kept with the result
-- (pgdedup.results.duplicates and .groups): a full decision stores them, recording any result
-- clears them, and an incremental decision adjusts them by what it replaced. A group (a kept
-- row with duplicates) can appear or vanish only where a replaced or new mark points, so only
-- those kept rows are looked up, by a new index on the marks' kept rows.
-- The progress report's last stage of an incremental run ("stored, marks written") counted
-- from the start of the run instead of from the end of the decision.
-- Applied by migration 0034. Released files are never edited: a change is a new file + migration.

-- The counts of a stored result (NULL: not known, count them). Only store_decision and
-- store_changes set them, each right after record_result, which clears them.
ALTER TABLE pgdedup.results ADD COLUMN duplicates bigint, ADD COLUMN groups bigint;
-- the marks pointing at a kept row: whether a group still has members after a change
CREATE INDEX duplicates_kept ON pgdedup.duplicates (collection_id, target, duplicate_of);

-- Record (replace) a result, as in revision 9; its stored counts no longer apply either.
CREATE OR REPLACE FUNCTION pgdedup.record_result(p_collection_id integer, p_target text, p_threshold double precision,
                                                 p_max_bucket integer, p_ranked boolean, p_keep_order text, p_verify text)
RETURNS void
LANGUAGE sql AS $$
    INSERT INTO pgdedup.results (collection_id, target, index_version, threshold, max_bucket, ranked, keep_order,
                                 verify, change_seq)
    SELECT p_collection_id, p_target, c.index_version, p_threshold, p_max_bucket, p_ranked, p_keep_order, p_verify,
           coalesce((SELECT max(ch.seq) FROM pgdedup.changes ch WHERE ch.collection_id = p_collection_id), 0)
    FROM pgdedup.collections c WHERE c.collection_id = p_collection_id
    ON CONFLICT (collection_id, target) DO UPDATE
    SET index_version = excluded.index_version, threshold = excluded.threshold, max_bucket = excluded.max_bucket,
        ranked = excluded.ranked, keep_order = excluded.keep_order, verify = excluded.verify,
        change_seq = excluded.change_seq, computed_at = now(), leaders = false, duplicates = NULL, groups = NULL
$$;

-- Store a full decision, as in revision 4, and keep its counts with the result.
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
    DELETE FROM pgdedup.duplicates d WHERE d.collection_id = p_collection_id AND d.target = p_target;
    INSERT INTO pgdedup.duplicates (collection_id, target, row_key, duplicate_of, similarity)
        SELECT p_collection_id, p_target, m.row_key, m.duplicate_of, m.similarity FROM pg_temp.pgdedup_marks m;
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

-- Store an incremental decision, as in revision 6: replace target p_target's marks of the keys
-- in pg_temp.pgdedup_redone with pg_temp.pgdedup_marks (whose keys are among them), record the
-- result, log the run. Returns (rows re-examined, duplicates, groups), the counts of the whole
-- result: the stored ones adjusted by what changed, or, if none are stored, counted.
-- Groups: a kept row k has a group before the change if a replaced mark or a mark of another
-- key (left alone) points at it, and after it if a new mark or such a mark does; a kept row no
-- replaced or new mark points at keeps what it had.
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
                     EXISTS (SELECT 1 FROM pg_temp.pgdedup_before b WHERE b.duplicate_of = k.duplicate_of)
                     OR EXISTS (SELECT 1 FROM pgdedup.duplicates d
                                WHERE d.collection_id = p_collection_id AND d.target = p_target
                                  AND d.duplicate_of = k.duplicate_of AND d.row_key <> ALL (keys)) AS had
              FROM (SELECT b.duplicate_of FROM pg_temp.pgdedup_before b
                    UNION SELECT m.duplicate_of FROM pg_temp.pgdedup_marks m) k) g;
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

-- The dedupe of a collection, as in revision 31, its last stage timed from the decision's end.
CREATE OR REPLACE FUNCTION pgdedup.update_duplicates_unchecked(p_collection text, p_alter boolean DEFAULT true,
                                          p_threshold double precision DEFAULT NULL, p_keep_order text DEFAULT NULL,
                                          p_column text DEFAULT 'duplicate_of', p_max_bucket integer DEFAULT 100,
                                          p_full boolean DEFAULT false, p_verify text DEFAULT 'estimate')
RETURNS TABLE (kind text, rows_examined bigint, duplicates bigint, groups bigint)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    cid integer := pgdedup.collection_id(p_collection);
    c pgdedup.collections;
    tgt text := CASE WHEN p_alter THEN 'column' ELSE 'view' END;
    prev pgdedup.results;
    started timestamptz := clock_timestamp();
    ord text;
    region record;
    reuse boolean;
    t0 timestamptz := clock_timestamp();
BEGIN
    PERFORM pgdedup.check_args(p_threshold, p_max_bucket, p_verify);
    IF p_verify = 'exact' THEN
        RAISE EXCEPTION 'update_duplicates decides by estimate or auto; an exact run is mark_duplicates or find_duplicates after pgdedup''s exact check'
            USING ERRCODE = 'PD003';
    END IF;
    ord := pgdedup.keep_order_sql(cid, p_keep_order);
    IF p_alter THEN
        PERFORM pgdedup.prepare_mark_column(p_collection, p_column);
    END IF;
    PERFORM pgdedup.lock_collection(cid);
    DROP TABLE IF EXISTS pg_temp.pgdedup_unchecked;
    CREATE TEMP TABLE pgdedup_unchecked (row_a bigint, row_b bigint, text_a bigint, text_b bigint) ON COMMIT DROP;
    SELECT * INTO c FROM pgdedup.collections WHERE collection_id = cid;
    SELECT * INTO prev FROM pgdedup.results r WHERE r.collection_id = cid AND r.target = tgt;
    IF p_full OR prev IS NULL OR prev.change_seq IS NULL OR prev.verify <> p_verify OR NOT prev.ranked
       OR NOT prev.leaders OR prev.threshold <> coalesce(p_threshold, c.threshold)
       OR prev.max_bucket <> p_max_bucket OR prev.keep_order IS DISTINCT FROM ord THEN
        -- the candidates once: kept for the call after auto's checks, the decision and the leaders.
        -- Those of an earlier call in this transaction, if made for this very decision: same
        -- collection, cap, keep order, index version and last logged change
        reuse := to_regclass('pg_temp.pgdedup_estimated_for') IS NOT NULL;
        IF reuse THEN  -- (a separate statement: the table may not exist)
            reuse := EXISTS (SELECT 1 FROM pg_temp.pgdedup_estimated_for f
                             WHERE f.collection_id = cid AND f.max_bucket = p_max_bucket AND f.keep_order = ord
                               AND f.index_version = c.index_version
                               AND f.change_seq IS NOT DISTINCT FROM
                                   (SELECT max(ch.seq) FROM pgdedup.changes ch WHERE ch.collection_id = cid));
        END IF;
        IF NOT reuse THEN
            DROP TABLE IF EXISTS pg_temp.pgdedup_estimated, pg_temp.pgdedup_estimated_for, pg_temp.pgdedup_shared;
            PERFORM pgdedup.rank_rows(cid, p_keep_order);
            CREATE TEMP TABLE pgdedup_shared ON COMMIT DROP AS
                SELECT * FROM pgdedup.shared_buckets(cid, p_max_bucket, true);
            CREATE TEMP TABLE pgdedup_estimated_for ON COMMIT DROP AS
                SELECT cid AS collection_id, p_max_bucket AS max_bucket, ord AS keep_order,
                       c.index_version, (SELECT max(ch.seq) FROM pgdedup.changes ch
                                         WHERE ch.collection_id = cid) AS change_seq;
            PERFORM set_config('pgdedup.reuse_estimated', 'on', true);  -- the pairs of pgdedup_shared
            CREATE TEMP TABLE pgdedup_estimated ON COMMIT DROP AS
                SELECT * FROM pgdedup.estimated_pairs(cid, p_max_bucket, true);
            PERFORM set_config('pgdedup.reuse_estimated', 'off', true);
            t0 := pgdedup.stage(format('%s candidate pairs estimated', (SELECT count(*) FROM pg_temp.pgdedup_estimated)), t0);
        END IF;
        IF p_verify = 'auto' THEN
            IF pgdedup.collect_unchecked(cid, coalesce(p_threshold, c.threshold)) THEN
                t0 := pgdedup.stage(format('%s ambiguous pairs to check exactly',
                                           (SELECT count(*) FROM pg_temp.pgdedup_unchecked)), t0);
                RETURN QUERY SELECT 'unchecked', count(*), 0::bigint, 0::bigint FROM pg_temp.pgdedup_unchecked;
                RETURN;
            END IF;
        END IF;
        PERFORM set_config('pgdedup.reuse_estimated', 'on', true);
        IF p_alter THEN
            RETURN QUERY SELECT 'full', m.* FROM pgdedup.mark_duplicates(p_collection, p_threshold, p_keep_order,
                                                                        p_column, p_max_bucket, p_verify) m;
        ELSE
            RETURN QUERY SELECT 'full', f.* FROM pgdedup.find_duplicates(p_collection, p_threshold, p_keep_order,
                                                                        p_max_bucket, p_verify) f;
            PERFORM pgdedup.prune_changes(cid);
        END IF;
        PERFORM set_config('pgdedup.reuse_estimated', 'off', true);
        t0 := pgdedup.stage('decided and stored in full', t0);
        PERFORM pgdedup.store_leaders(cid, tgt, p_max_bucket);
        t0 := pgdedup.stage('leaders of the capped buckets stored', t0);
        DROP TABLE IF EXISTS pg_temp.pgdedup_estimated, pg_temp.pgdedup_estimated_for, pg_temp.pgdedup_shared;  -- used up
        RETURN;
    END IF;
    DROP TABLE IF EXISTS pg_temp.pgdedup_estimated, pg_temp.pgdedup_estimated_for, pg_temp.pgdedup_shared;  -- a full run's only
    region := pgdedup.decide_changes(cid, tgt, p_threshold, p_keep_order, p_max_bucket, prev.change_seq, p_verify);
    t0 := clock_timestamp();  -- decide_changes reported its own stages
    IF EXISTS (SELECT 1 FROM pg_temp.pgdedup_unchecked) THEN
        t0 := pgdedup.stage(format('%s ambiguous pairs to check exactly',
                                   (SELECT count(*) FROM pg_temp.pgdedup_unchecked)), t0);
        RETURN QUERY SELECT 'unchecked', count(*), 0::bigint, 0::bigint FROM pg_temp.pgdedup_unchecked;
        RETURN;
    END IF;
    RETURN QUERY SELECT 'incremental', s.* FROM pgdedup.store_changes(cid, tgt, p_threshold, ord, p_max_bucket,
                                                                      started, region.texts) s;
    -- store_changes records a result and a run by estimate: record the mode that decided them
    UPDATE pgdedup.results r SET verify = p_verify WHERE r.collection_id = cid AND r.target = tgt;
    UPDATE pgdedup.runs r SET stats = jsonb_set(r.stats, '{verify}', to_jsonb(p_verify))
    WHERE r.run_id = (SELECT max(x.run_id) FROM pgdedup.runs x WHERE x.collection_id = cid AND x.kind = 'dedupe');
    -- only the touched buckets can have other leaders now
    DELETE FROM pgdedup.leaders l USING pg_temp.pgdedup_touched k
    WHERE l.collection_id = cid AND l.target = tgt AND l.band = k.band AND l.bucket = k.bucket;
    INSERT INTO pgdedup.leaders (collection_id, target, band, bucket, text_hash)
        SELECT cid, tgt, l.band, l.bucket, l.text_hash
        FROM pg_temp.pgdedup_leaders l JOIN pg_temp.pgdedup_touched k ON k.band = l.band AND k.bucket = l.bucket;
    UPDATE pgdedup.results r SET leaders = true WHERE r.collection_id = cid AND r.target = tgt;
    IF p_alter THEN
        PERFORM pgdedup.write_marks(cid, true);
    END IF;
    PERFORM pgdedup.prune_changes(cid);
    t0 := pgdedup.stage('stored' || CASE WHEN p_alter THEN ', marks written' ELSE '' END, t0);
END $$;

SELECT pgdedup.pin_search_paths();
-- CREATE OR REPLACE reset its settings of revisions 11 and 15: put them back
ALTER FUNCTION pgdedup.update_duplicates_unchecked(text, boolean, double precision, text, text, integer, boolean, text)
    SET client_min_messages = warning;
ALTER FUNCTION pgdedup.update_duplicates_unchecked(text, boolean, double precision, text, text, integer, boolean, text)
    SET jit = off;
