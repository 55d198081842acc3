-- pgdedup schema, version 40: the state an auto dedupe keeps between its calls in one
-- transaction is trusted only if this transaction made it, and untouched.
-- A full auto run keeps its candidates' estimates and ranks (pg_temp.pgdedup_estimated, marked
-- by pgdedup_estimated_for, since revision 11) and an incremental one its closure (marked by
-- pgdedup_resume, revision 39) for the call after the exact checks. Temp tables belong to the
-- session, not the transaction: a session shared by roles (a pool without DISCARD ALL, SET ROLE)
-- could hand a later transaction tables and a marker planted earlier, without ON COMMIT DROP,
-- and the reuse checks (arguments, index version, last logged change, relation ids, number of
-- edges) can all be made to match. Now each marker also records the transaction's start
-- (transaction_timestamp(), to the microsecond, which no earlier transaction can foresee), and
-- the closure's fingerprint also counts the rows inserted, updated and deleted in each kept table
-- during this transaction (pg_stat_get_xact_tuples_*), so that a caller who edits one in place
-- between the calls (a DELETE, an UPDATE, a TRUNCATE) gets a decision made afresh too.
-- Applied by migration 0040. Released files are never edited: a change is a new file + migration.

-- The closure's fingerprint, as in revision 39, with the transaction's start and each kept
-- table's inserted, updated and deleted rows in this transaction.
CREATE OR REPLACE FUNCTION pgdedup.closure_state() RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    tables oid[] := ARRAY[to_regclass('pg_temp.pgdedup_redone'), to_regclass('pg_temp.pgdedup_lost'),
                          to_regclass('pg_temp.pgdedup_touched'), to_regclass('pg_temp.pgdedup_members'),
                          to_regclass('pg_temp.pgdedup_leaders'), to_regclass('pg_temp.pgdedup_was'),
                          to_regclass('pg_temp.pgdedup_moved'), to_regclass('pg_temp.pgdedup_seeds'),
                          to_regclass('pg_temp.pgdedup_region'), to_regclass('pg_temp.pgdedup_frontier'),
                          to_regclass('pg_temp.pgdedup_edges'), to_regclass('pg_temp.pgdedup_step_pairs')]::oid[];
BEGIN
    IF array_position(tables, NULL) IS NOT NULL THEN
        RETURN NULL;
    END IF;
    RETURN transaction_timestamp()::text || ';'
        || (SELECT string_agg(format('%s:%s/%s/%s', t, pg_stat_get_xact_tuples_inserted(t),
                                     pg_stat_get_xact_tuples_updated(t), pg_stat_get_xact_tuples_deleted(t)),
                              ',' ORDER BY n)
            FROM unnest(tables) WITH ORDINALITY AS u(t, n))
        || ';' || (SELECT count(*) FROM pg_temp.pgdedup_edges);
END $$;

-- A full auto run's state, as in revisions 34 (update_duplicates_unchecked), 15 (reusing) and
-- 14 (rank_rows), with pgdedup_estimated_for recording the transaction's start and each reuse
-- requiring it.
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
                               AND f.index_version = c.index_version AND f.started = transaction_timestamp()
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
                                         WHERE ch.collection_id = cid) AS change_seq,
                       transaction_timestamp() AS started;
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
ALTER FUNCTION pgdedup.update_duplicates_unchecked(text, boolean, double precision, text, text, integer, boolean, text)
    SET client_min_messages = warning;
ALTER FUNCTION pgdedup.update_duplicates_unchecked(text, boolean, double precision, text, text, integer, boolean, text)
    SET jit = off;

CREATE OR REPLACE FUNCTION pgdedup.reusing(p_collection_id integer, p_max_bucket integer) RETURNS boolean
LANGUAGE plpgsql STABLE AS $$
BEGIN
    IF current_setting('pgdedup.reuse_estimated', true) IS DISTINCT FROM 'on'
       OR to_regclass('pg_temp.pgdedup_estimated_for') IS NULL THEN
        RETURN false;
    END IF;
    RETURN EXISTS (SELECT 1 FROM pg_temp.pgdedup_estimated_for f
                   WHERE f.collection_id = p_collection_id AND f.max_bucket = p_max_bucket
                     AND f.started = transaction_timestamp());
END $$;

CREATE OR REPLACE FUNCTION pgdedup.rank_rows(p_collection_id integer, p_keep_order text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    c pgdedup.collections;
    ord text := pgdedup.keep_order_sql(p_collection_id, p_keep_order);
BEGIN
    SELECT * INTO c FROM pgdedup.collections WHERE collection_id = p_collection_id;
    -- (pgdedup_estimated_for exists from the ranking of an auto run's candidates to the end of that run)
    IF current_setting('pgdedup.reuse_estimated', true) = 'on' AND to_regclass('pg_temp.pgdedup_ranked_for') IS NOT NULL
       AND to_regclass('pg_temp.pgdedup_estimated_for') IS NOT NULL
       AND to_regclass('pg_temp.pgdedup_rows') IS NOT NULL AND to_regclass('pg_temp.pgdedup_rank') IS NOT NULL THEN
        IF EXISTS (SELECT 1 FROM pg_temp.pgdedup_ranked_for f
                   WHERE f.collection_id = p_collection_id AND f.keep_order = ord AND f.index_version = c.index_version
                     AND f.rows_table = 'pg_temp.pgdedup_rows'::regclass
                     AND f.rank_table = 'pg_temp.pgdedup_rank'::regclass)
           AND EXISTS (SELECT 1 FROM pg_temp.pgdedup_estimated_for e WHERE e.started = transaction_timestamp()) THEN
            RETURN ord;
        END IF;
    END IF;
    DROP TABLE IF EXISTS pg_temp.pgdedup_rows, pg_temp.pgdedup_rank, pg_temp.pgdedup_ranked_for;
    EXECUTE format(
        'CREATE TEMP TABLE pgdedup_rows ON COMMIT DROP AS
         SELECT g.row_id, g.row_key, g.text_hash, row_number() OVER (ORDER BY %s) AS rnk
         FROM %I.%I s JOIN pgdedup.signatures g ON g.collection_id = $1 AND g.row_key = s.%I::text
         WHERE g.feature_count > 0',
        ord, c.source_schema, c.source_table, c.key_column) USING p_collection_id;
    CREATE TEMP TABLE pgdedup_rank ON COMMIT DROP AS
        SELECT text_hash, min(rnk) AS rnk FROM pgdedup_rows GROUP BY text_hash;
    ANALYZE pgdedup_rank;
    CREATE TEMP TABLE pgdedup_ranked_for ON COMMIT DROP AS
        SELECT p_collection_id AS collection_id, ord AS keep_order, c.index_version,
               'pg_temp.pgdedup_rows'::regclass AS rows_table, 'pg_temp.pgdedup_rank'::regclass AS rank_table;
    RETURN ord;
END $$;

SELECT pgdedup.pin_search_paths();
